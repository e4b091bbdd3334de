import { parseIp } from "./ip.ts";
import {
  type CallbackUrlCheck,
  checkAddress,
  checkCallbackUrl,
  checkHostname,
  type EgressPolicy,
  type EgressRefusal,
} from "./policy.ts";

/** What a host in a URL is under one policy: a literal address (with its verdict) or a name. */
export type HostVerdict =
  | { readonly kind: "address"; readonly family: 4 | 6; readonly refusal: EgressRefusal | null }
  | { readonly kind: "name"; readonly refusal: EgressRefusal | null };

/**
 * The egress checks of one policy ({@link checkCallbackUrl}, {@link checkAddress}), remembered
 * per input. Each check is a pure function of its input string and the policy, so a remembered
 * verdict is the verdict the check would give again. Nothing about DNS is remembered: a name is
 * resolved at every attempt and each address it resolves to is judged (a verdict on an address
 * string is the same whatever name led there).
 */
export interface EgressChecker {
  readonly policy: EgressPolicy;
  /** {@link checkCallbackUrl}. The URL returned is shared between calls: read it, never change it. */
  url(url: string): CallbackUrlCheck;
  /** {@link checkAddress} of an address a name resolved to. */
  address(ip: string): EgressRefusal | null;
  /** A URL's host (brackets removed): a literal address judged by its value, or a name by its spelling. */
  host(host: string): HostVerdict;
}

export interface EgressCheckerOptions {
  /** Inputs remembered per kind of check; the oldest is forgotten beyond it. 0: remember none. */
  readonly maxEntries?: number;
}

/** A map that forgets its oldest entry beyond `max` entries. */
function bounded<V>(max: number, compute: (key: string) => V): (key: string) => V {
  const entries = new Map<string, V>();
  return (key) => {
    const found = entries.get(key);
    if (found !== undefined) return found;
    const value = compute(key);
    if (max <= 0) return value;
    entries.set(key, value);
    if (entries.size > max) {
      const oldest = entries.keys().next().value as string;
      entries.delete(oldest);
    }
    return value;
  };
}

/**
 * Remembers the egress checks of `policy` for the callback service's attempts, which check the
 * same few URLs and addresses over and over (URL parsing and address classification were 8% of
 * the service's CPU in the bench profile).
 */
export function createEgressChecker(
  policy: EgressPolicy,
  options: EgressCheckerOptions = {},
): EgressChecker {
  const max = options.maxEntries ?? 1_024;
  const frozen: EgressPolicy = {
    ...(policy.allowCidrs ? { allowCidrs: [...policy.allowCidrs] } : {}),
    ...(policy.allowPrivate ? { allowPrivate: true } : {}),
  };
  const address = bounded(max, (ip) => checkAddress(ip, frozen));
  const host = bounded(max, (name): HostVerdict => {
    const literal = parseIp(name);
    return literal
      ? { kind: "address", family: literal.family, refusal: checkAddress(name, frozen) }
      : { kind: "name", refusal: checkHostname(name, frozen) };
  });
  const url = bounded(max, (text) => checkCallbackUrl(text, frozen));
  return { policy: frozen, url, address, host };
}
