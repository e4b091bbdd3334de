import { type IpAddress, parseIp } from "./ip.ts";

/** A parsed CIDR block such as 10.0.0.0/8 or fd00::/8. */
export interface CidrBlock {
  family: 4 | 6;
  base: bigint;
  prefix: number;
  /** Canonical text, for logs and messages. */
  text: string;
}

/** Thrown for an unusable allowlist entry; the message names the entry and the reason. */
export class CidrParseError extends Error {
  readonly entry: string;
  constructor(entry: string, reason: string) {
    super(`invalid CIDR "${entry}": ${reason}`);
    this.name = "CidrParseError";
    this.entry = entry;
  }
}

const bitsOf = (family: 4 | 6) => (family === 4 ? 32 : 128);

function mask(family: 4 | 6, prefix: number): bigint {
  const bits = BigInt(bitsOf(family));
  const all = (1n << bits) - 1n;
  return (all >> BigInt(prefix)) ^ all;
}

/**
 * Parses one CIDR (`addr/len`) or a bare address (a /32 or /128). Host bits must be zero so a
 * typo such as 10.0.0.1/8 is caught instead of silently widening the allowlist.
 */
export function parseCidr(entry: string): CidrBlock {
  const trimmed = entry.trim();
  if (trimmed === "") throw new CidrParseError(entry, "empty entry");
  const slash = trimmed.indexOf("/");
  const addressText = slash < 0 ? trimmed : trimmed.slice(0, slash);
  const address = parseIp(addressText);
  if (!address) throw new CidrParseError(entry, `"${addressText}" is not an IPv4 or IPv6 address`);
  const maxPrefix = bitsOf(address.family);
  let prefix = maxPrefix;
  if (slash >= 0) {
    const lengthText = trimmed.slice(slash + 1);
    if (!/^\d{1,3}$/.test(lengthText) || Number(lengthText) > maxPrefix) {
      throw new CidrParseError(
        entry,
        `prefix length must be an integer from 0 to ${maxPrefix} for IPv${address.family}`,
      );
    }
    prefix = Number(lengthText);
  }
  const base = address.value & mask(address.family, prefix);
  if (base !== address.value) {
    throw new CidrParseError(
      entry,
      `host bits are set; did you mean ${formatCidr(address.family, base, prefix)}?`,
    );
  }
  return { family: address.family, base, prefix, text: formatCidr(address.family, base, prefix) };
}

function formatCidr(family: 4 | 6, base: bigint, prefix: number): string {
  if (family === 4) {
    return `${[24n, 16n, 8n, 0n].map((s) => String((base >> s) & 0xffn)).join(".")}/${prefix}`;
  }
  const groups = [112n, 96n, 80n, 64n, 48n, 32n, 16n, 0n].map((s) =>
    ((base >> s) & 0xffffn).toString(16),
  );
  return `${groups.join(":")}/${prefix}`;
}

/**
 * Parses an allowlist from config: an array of entries or one comma/whitespace-separated string.
 * Throws {@link CidrParseError} for the first bad entry.
 */
export function parseCidrList(input: string | readonly string[]): CidrBlock[] {
  const entries = typeof input === "string" ? input.split(/[\s,]+/).filter((e) => e !== "") : input;
  return entries.map(parseCidr);
}

/** True when `address` lies inside `block` (families must match). */
export function cidrContains(block: CidrBlock, address: IpAddress): boolean {
  return (
    block.family === address.family &&
    (address.value & mask(block.family, block.prefix)) === block.base
  );
}
