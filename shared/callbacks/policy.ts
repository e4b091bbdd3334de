import type { CallbacksConfig } from "../config/index.ts";
import { type EgressPolicy, parseCidrList } from "../net/index.ts";

/**
 * The egress policy of `callbacks.allow_cidrs` / `allow_private`. Throws CidrParseError naming a
 * bad entry, so a typo stops start-up instead of silently widening or narrowing the allowlist.
 * Used at submit (ingress) and at every delivery (callback service).
 */
export function callbackEgressPolicy(callbacks: CallbacksConfig): EgressPolicy {
  return {
    allowCidrs: parseCidrList(callbacks.allow_cidrs),
    allowPrivate: callbacks.allow_private,
  };
}
