import { type CidrBlock, cidrContains } from "./cidr.ts";
import {
  ADDRESS_RULE_WORDING,
  type AddressRule,
  classifyParsed,
  effectiveAddress,
} from "./classify.ts";
import { parseIp } from "./ip.ts";

/** Egress policy for callback destinations. */
export interface EgressPolicy {
  /** Blocks that may be reached although they are special-purpose (e.g. a partner's VPN range). */
  allowCidrs?: readonly CidrBlock[];
  /** Development only: allow every special-purpose range except cloud metadata. */
  allowPrivate?: boolean;
}

/** Rules that apply to the URL itself rather than to an address. */
export type UrlRule = "invalid_url" | "unsupported_scheme" | "userinfo";

/** Why a destination is refused. `message` is safe to show to the API caller. */
export interface EgressRefusal {
  rule: AddressRule | UrlRule;
  message: string;
}

/** Hostnames refused without resolving them (compared lower-case, without a trailing dot). */
const BLOCKED_NAMES: ReadonlyMap<string, AddressRule> = new Map([
  ["metadata.google.internal", "cloud_metadata"],
  ["metadata.goog", "cloud_metadata"],
  ["localhost", "loopback"],
]);

/** The refusal message for an address rule, e.g. "callback_url resolves to a private address (rfc1918)". */
export function addressRefusal(rule: AddressRule): EgressRefusal {
  return { rule, message: `callback_url resolves to ${ADDRESS_RULE_WORDING[rule]} (${rule})` };
}

/**
 * Checks one resolved or literal IP against the policy: null when it may be contacted.
 * Cloud metadata stays refused whatever the allowlist says: no legitimate callback lives there.
 */
export function checkAddress(ip: string, policy: EgressPolicy = {}): EgressRefusal | null {
  const parsed = parseIp(ip);
  if (!parsed) return addressRefusal("invalid_address");
  const rule = classifyParsed(parsed);
  if (rule === null) return null;
  if (rule === "cloud_metadata" || rule === "invalid_address") return addressRefusal(rule);
  if (policy.allowPrivate) return null;
  const effective = effectiveAddress(parsed);
  const allowed = (policy.allowCidrs ?? []).some(
    (block) => cidrContains(block, effective) || cidrContains(block, parsed),
  );
  return allowed ? null : addressRefusal(rule);
}

/** Refusal for a hostname that is dangerous by name alone (localhost, metadata names), else null. */
export function checkHostname(hostname: string, policy: EgressPolicy = {}): EgressRefusal | null {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  const rule = BLOCKED_NAMES.get(name) ?? (name.endsWith(".localhost") ? "loopback" : undefined);
  if (!rule) return null;
  if (rule !== "cloud_metadata" && policy.allowPrivate) return null;
  return addressRefusal(rule);
}

/** Strips the brackets URL.hostname keeps around IPv6 literals. */
export function unbracket(hostname: string): string {
  return hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
}

export type CallbackUrlCheck = { ok: true; url: URL } | ({ ok: false } & EgressRefusal);

const MAX_URL_LENGTH = 2048;

/**
 * Submit-time check of a callback_url: absolute http(s), no userinfo, no dangerous hostname,
 * and literal IPs must pass {@link checkAddress}. Names are resolved only at delivery time
 * ({@link resolveAndCheck}), since DNS answers can change in between.
 */
export function checkCallbackUrl(url: string, policy: EgressPolicy = {}): CallbackUrlCheck {
  const refuse = (rule: AddressRule | UrlRule, message: string): CallbackUrlCheck => ({
    ok: false,
    rule,
    message,
  });
  if (url.length > MAX_URL_LENGTH) {
    return refuse("invalid_url", `callback_url is longer than ${MAX_URL_LENGTH} characters`);
  }
  let parsed: URL;
  try {
    // No base: relative references are refused rather than resolved against anything.
    parsed = new URL(url);
  } catch {
    return refuse("invalid_url", "callback_url is not an absolute URL");
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    return refuse("unsupported_scheme", "callback_url must use http or https");
  }
  if (parsed.username !== "" || parsed.password !== "") {
    return refuse("userinfo", "callback_url must not contain a user name or password");
  }
  const host = unbracket(parsed.hostname);
  if (host === "") return refuse("invalid_url", "callback_url has no host");
  // The WHATWG parser has already normalised forms like 0x7f.1 or 2130706433 to dotted quads.
  const refusal = parseIp(host) ? checkAddress(host, policy) : checkHostname(host, policy);
  return refusal ? { ok: false, ...refusal } : { ok: true, url: parsed };
}
