/** An IP address as a number: 32 bits for IPv4, 128 bits for IPv6. */
export interface IpAddress {
  family: 4 | 6;
  value: bigint;
}

const IPV4_PART = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
const HEXTET = /^[0-9a-f]{1,4}$/i;

/**
 * Parses strict dotted-quad IPv4 (no leading zeros, which some resolvers read as octal).
 * Returns undefined for anything else.
 */
export function parseIpv4(text: string): IpAddress | undefined {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((p) => IPV4_PART.test(p))) return undefined;
  const value = parts.reduce((acc, p) => (acc << 8n) | BigInt(Number(p)), 0n);
  return { family: 4, value };
}

function hextets(text: string): bigint[] | undefined {
  if (text === "") return [];
  const out: bigint[] = [];
  const parts = text.split(":");
  for (const [i, part] of parts.entries()) {
    if (i === parts.length - 1 && part.includes(".")) {
      const v4 = parseIpv4(part);
      if (!v4) return undefined;
      out.push(v4.value >> 16n, v4.value & 0xffffn);
    } else if (HEXTET.test(part)) {
      out.push(BigInt(Number.parseInt(part, 16)));
    } else {
      return undefined;
    }
  }
  return out;
}

/**
 * Parses IPv6 text, including `::` compression, an embedded dotted quad, surrounding brackets
 * (as in URL hosts) and a zone id (`%eth0`, dropped). Returns undefined for anything else.
 */
export function parseIpv6(input: string): IpAddress | undefined {
  let text = input.startsWith("[") && input.endsWith("]") ? input.slice(1, -1) : input;
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  if (!text.includes(":")) return undefined;
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const head = hextets(halves[0] ?? "");
  const tail = halves.length === 2 ? hextets(halves[1] ?? "") : [];
  if (!head || !tail) return undefined;
  // An embedded IPv4 may only sit at the very end.
  if (halves.length === 2 && halves[0]?.includes(".")) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const all = [...head, ...Array<bigint>(Math.max(missing, 0)).fill(0n), ...tail];
  if (all.length !== 8) return undefined;
  return { family: 6, value: all.reduce((acc, h) => (acc << 16n) | h, 0n) };
}

/** Parses IPv4 or IPv6 text; undefined when it is not an IP literal. */
export function parseIp(text: string): IpAddress | undefined {
  return parseIpv4(text) ?? parseIpv6(text);
}

/** The IPv4 address carried in the low 32 bits of an IPv6 value. */
export function lowIpv4(value: bigint): IpAddress {
  return { family: 4, value: value & 0xffff_ffffn };
}
