import { lookup } from "node:dns/promises";
import { createEgressChecker, type EgressChecker } from "./checker.ts";
import { type EgressPolicy, type EgressRefusal, unbracket } from "./policy.ts";

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a hostname to all of its addresses. Inject a fake in tests. */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** The operating system resolver (getaddrinfo via node:dns), all addresses. */
export const systemResolver: Resolver = async (hostname) => {
  const found = await lookup(hostname, { all: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export type ResolveCheck =
  | { ok: true; address: string; family: 4 | 6 }
  | ({ ok: false; errorClass: "ssrf_blocked" } & EgressRefusal)
  | { ok: false; errorClass: "dns"; message: string };

export interface ResolveOptions extends EgressPolicy {
  resolver?: Resolver;
  /** Remembered checks of the policy (its policy is used instead of the options' own). */
  checker?: EgressChecker;
}

/**
 * Delivery-time check: resolves `hostname` and refuses when ANY answer is disallowed (a mixed
 * answer set is a classic rebinding trick). On success returns the address to connect to; the
 * caller must connect to exactly that address, not resolve again.
 */
export async function resolveAndCheck(
  hostname: string,
  options: ResolveOptions = {},
): Promise<ResolveCheck> {
  // Read field by field: a rest pattern copied the options at every callback attempt.
  const resolver = options.resolver ?? systemResolver;
  const checks =
    options.checker ??
    createEgressChecker(
      { allowCidrs: options.allowCidrs, allowPrivate: options.allowPrivate },
      { maxEntries: 0 },
    );
  const host = unbracket(hostname);
  const verdict = checks.host(host);
  if (verdict.refusal) return { ok: false, errorClass: "ssrf_blocked", ...verdict.refusal };
  if (verdict.kind === "address") return { ok: true, address: host, family: verdict.family };

  let answers: readonly ResolvedAddress[];
  try {
    answers = await resolver(host);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    return {
      ok: false,
      errorClass: "dns",
      message: `DNS lookup failed (${typeof code === "string" ? code : "error"})`,
    };
  }
  const first = answers[0];
  if (!first) return { ok: false, errorClass: "dns", message: "DNS lookup returned no addresses" };
  for (const answer of answers) {
    const refusal = checks.address(answer.address);
    if (refusal) return { ok: false, errorClass: "ssrf_blocked", ...refusal };
  }
  return { ok: true, address: first.address, family: first.family };
}
