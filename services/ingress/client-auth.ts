import type { ClientConfig } from "../../shared/config/index.ts";
import { RateLimitedError, UnauthorizedError } from "../../shared/errors/index.ts";
import type { Authenticator } from "./auth.ts";
import { type AuthFailureLimiter, clientAddress, type SocketAddress } from "./auth-limit.ts";
import type { RateLimiter } from "./rate-limit.ts";
import type { SharedRateLimiter } from "./shared-rate-limit.ts";

/** The part of Bun's server the ingress uses: the peer address of a request. */
export interface PeerSource {
  requestIP(request: Request): SocketAddress | null;
}

export interface ClientAuthDeps {
  readonly auth: Authenticator;
  /** Per-client limits: shared by every replica (KV), or this process's own (tests, tools). */
  readonly rateLimiter: RateLimiter | SharedRateLimiter;
  /** Failed authentications per source address; checked before any token (docs/security.md). */
  readonly authFailures?: AuthFailureLimiter;
  /** server.trust_proxy_hops: how many X-Forwarded-For entries from the right are trusted. */
  readonly trustProxyHops?: number;
}

/** Authenticates a Client API request: the address's failures first, the token, the rate limit. */
export type AuthenticateClient = (
  request: Request,
  server: PeerSource | null,
) => Promise<ClientConfig>;

export function createClientAuth(deps: ClientAuthDeps): AuthenticateClient {
  return async (request, server) => {
    const limiter = deps.authFailures;
    let found: string | undefined;
    const address = () => {
      found ??= clientAddress(request, server?.requestIP(request), deps.trustProxyHops ?? 0);
      return found;
    };
    const blocked = limiter?.mayBlock() ? limiter.blockedFor(address()) : 0;
    if (blocked > 0) {
      // Refused before the token is read: brute force and JWT-verification floods stay cheap.
      throw new RateLimitedError({
        detail: "Too many failed authentications from this address.",
        headers: { "retry-after": String(blocked) },
      });
    }
    const client = await deps.auth
      .authenticate(request.headers.get("authorization"))
      .catch((err: unknown) => {
        if (err instanceof UnauthorizedError) limiter?.failed(address());
        throw err;
      });
    const wait = await deps.rateLimiter.take(`client:${client.id}`, client.runs_per_minute);
    if (wait > 0) {
      throw new RateLimitedError({
        detail: `Client rate limit of ${client.runs_per_minute} requests per minute reached.`,
        headers: { "retry-after": String(wait) },
      });
    }
    return client;
  };
}
