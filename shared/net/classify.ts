import { type CidrBlock, cidrContains, parseCidr } from "./cidr.ts";
import { type IpAddress, lowIpv4, parseIp } from "./ip.ts";

/** Why an address is not a public unicast destination. */
export type AddressRule =
  | "cloud_metadata"
  | "loopback"
  | "rfc1918"
  | "link_local"
  | "cgnat"
  | "unique_local"
  | "site_local"
  | "multicast"
  | "this_network"
  | "unspecified"
  | "broadcast"
  | "reserved"
  | "benchmark"
  | "documentation"
  | "ietf_protocol"
  | "relay_6to4"
  | "ipv4_compatible"
  | "nat64_local"
  | "discard"
  | "teredo"
  | "invalid_address";

/** Short human wording per rule, used in refusal messages ("resolves to <wording> (<rule>)"). */
export const ADDRESS_RULE_WORDING: Readonly<Record<AddressRule, string>> = {
  cloud_metadata: "a cloud metadata endpoint",
  loopback: "a loopback address",
  rfc1918: "a private address",
  link_local: "a link-local address",
  cgnat: "a carrier-grade NAT address",
  unique_local: "a unique-local (private) IPv6 address",
  site_local: "a deprecated site-local IPv6 address",
  multicast: "a multicast address",
  this_network: "a 'this network' address",
  unspecified: "the unspecified address",
  broadcast: "the broadcast address",
  reserved: "a reserved address",
  benchmark: "a benchmarking address",
  documentation: "a documentation address",
  ietf_protocol: "an IETF protocol assignment",
  relay_6to4: "the deprecated 6to4 relay anycast range",
  ipv4_compatible: "a deprecated IPv4-compatible IPv6 address",
  nat64_local: "a local-use NAT64 address",
  discard: "the IPv6 discard prefix",
  teredo: "a Teredo tunnel address",
  invalid_address: "an unparseable address",
};

type Rule = readonly [AddressRule, CidrBlock];
const rules = (rule: AddressRule, ...cidrs: string[]): Rule[] =>
  cidrs.map((c) => [rule, parseCidr(c)] as const);

// First match wins, so the specific entries (metadata) come before the ranges that contain them.
const IPV4_RULES: readonly Rule[] = [
  // AWS/GCP/Azure/OCI IMDS; Alibaba Cloud; Azure WireServer (a public address, never a callback).
  ...rules("cloud_metadata", "169.254.169.254/32", "100.100.100.200/32", "168.63.129.16/32"),
  ...rules("this_network", "0.0.0.0/8"),
  ...rules("loopback", "127.0.0.0/8"),
  ...rules("rfc1918", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"),
  ...rules("cgnat", "100.64.0.0/10"),
  ...rules("link_local", "169.254.0.0/16"),
  ...rules("ietf_protocol", "192.0.0.0/24"),
  ...rules("documentation", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24"),
  ...rules("relay_6to4", "192.88.99.0/24"),
  ...rules("benchmark", "198.18.0.0/15"),
  ...rules("multicast", "224.0.0.0/4"),
  ...rules("broadcast", "255.255.255.255/32"),
  ...rules("reserved", "240.0.0.0/4"),
];

const IPV6_RULES: readonly Rule[] = [
  ...rules("cloud_metadata", "fd00:ec2::254/128"),
  ...rules("unspecified", "::/128"),
  ...rules("loopback", "::1/128"),
  ...rules("ipv4_compatible", "::/96"),
  ...rules("nat64_local", "64:ff9b:1::/48"),
  ...rules("discard", "100::/64"),
  ...rules("teredo", "2001::/32"),
  ...rules("benchmark", "2001:2::/48"),
  ...rules("ietf_protocol", "2001::/23"),
  ...rules("documentation", "2001:db8::/32", "3fff::/20"),
  ...rules("unique_local", "fc00::/7"),
  ...rules("link_local", "fe80::/10"),
  ...rules("site_local", "fec0::/10"),
  ...rules("multicast", "ff00::/8"),
];

// IPv6 forms whose meaning is an IPv4 destination: judge them by that IPv4 address, otherwise
// ::ffff:127.0.0.1 or 64:ff9b::10.0.0.1 would slip past IPv4 rules.
const MAPPED = parseCidr("::ffff:0:0/96"); // IPv4-mapped
const TRANSLATED = parseCidr("::ffff:0:0:0/96"); // SIIT IPv4-translated
const NAT64 = parseCidr("64:ff9b::/96"); // well-known NAT64 prefix
const SIX_TO_FOUR = parseCidr("2002::/16"); // 6to4: IPv4 in bits 16–47
const GLOBAL_UNICAST = parseCidr("2000::/3");

function firstMatch(table: readonly Rule[], address: IpAddress): AddressRule | null {
  for (const [rule, block] of table) if (cidrContains(block, address)) return rule;
  return null;
}

/**
 * For IPv6 forms that carry an IPv4 destination, the IPv4 address; otherwise the input.
 * Allowlists and rules are matched against this.
 */
export function effectiveAddress(address: IpAddress): IpAddress {
  if (address.family === 4) return address;
  if ([MAPPED, TRANSLATED, NAT64].some((b) => cidrContains(b, address))) {
    return lowIpv4(address.value);
  }
  if (cidrContains(SIX_TO_FOUR, address)) return lowIpv4(address.value >> 80n);
  return address;
}

/** {@link classifyAddress} for an already parsed address. */
export function classifyParsed(parsed: IpAddress): AddressRule | null {
  const address = effectiveAddress(parsed);
  if (address.family === 4) return firstMatch(IPV4_RULES, address);
  // Everything outside 2000::/3 is unassigned or special-purpose; refuse it by default.
  return (
    firstMatch(IPV6_RULES, address) ?? (cidrContains(GLOBAL_UNICAST, address) ? null : "reserved")
  );
}

/**
 * Names the special-purpose range an IP literal belongs to, or null for a public unicast address.
 * IPv4-mapped, SIIT, NAT64 (64:ff9b::/96) and 6to4 addresses are judged by their embedded IPv4.
 * Text that is not an IP address yields "invalid_address" (fail closed).
 */
export function classifyAddress(ip: string): AddressRule | null {
  const parsed = parseIp(ip);
  return parsed ? classifyParsed(parsed) : "invalid_address";
}
