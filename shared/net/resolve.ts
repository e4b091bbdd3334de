import { lookup } from "node:dns/promises";
import { parseIp } from "./ip.ts";
import {
  checkAddress,
  checkHostname,
  type EgressPolicy,
  type EgressRefusal,
  unbracket,
} from "./policy.ts";

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
}

/**
 * Delivery-time check: resolves `hostname` and refuses when ANY answer is disallowed (a mixed
 * answer set is a classic rebinding trick). On success returns the address to connect to; the
 * caller must connect to exactly that address, not resolve again.
 */
export async function resolveAndCheck(
  hostname: string,
  { resolver = systemResolver, ...policy }: ResolveOptions = {},
): Promise<ResolveCheck> {
  const host = unbracket(hostname);
  const literal = parseIp(host);
  if (literal) {
    const refusal = checkAddress(host, policy);
    if (refusal) return { ok: false, errorClass: "ssrf_blocked", ...refusal };
    return { ok: true, address: host, family: literal.family };
  }
  const named = checkHostname(host, policy);
  if (named) return { ok: false, errorClass: "ssrf_blocked", ...named };

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
    const refusal = checkAddress(answer.address, policy);
    if (refusal) return { ok: false, errorClass: "ssrf_blocked", ...refusal };
  }
  return { ok: true, address: first.address, family: first.family };
}
