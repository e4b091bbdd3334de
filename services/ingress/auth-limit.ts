import type { Clock } from "../../shared/clock/index.ts";

/**
 * Counts failed authentications per source address. Checked before the token is looked at, so a
 * flood of bad tokens (or of JWTs that each cost a signature check or a JWKS fetch) from one
 * address is refused cheaply. Successful authentications take nothing from the budget.
 */
export interface AuthFailureLimiter {
  /** Seconds until `address` may try again (0: it may try now). Does not consume anything. */
  blockedFor(address: string): number;
  /** Records one failed authentication from `address`. */
  failed(address: string): void;
  /**
   * False when no address can be blocked now: the caller may skip finding the request's address
   * (Bun's requestIP is a measurable share of a request's CPU).
   */
  mayBlock(): boolean;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/**
 * A token bucket per address: `perMinute` failures of burst, refilled at `perMinute / 60` per
 * second. In memory per ingress replica, like the client rate limit. When `maxKeys` addresses are
 * tracked, the least recently failed one is forgotten (Map keeps insertion order, and each failure
 * re-inserts its key), so a spray of addresses cannot reset a busy attacker's bucket wholesale.
 */
export function createAuthFailureLimiter(
  clock: Clock,
  perMinute: number,
  maxKeys = 100_000,
): AuthFailureLimiter {
  const buckets = new Map<string, Bucket>();
  const ratePerMs = perMinute / 60_000;
  const refilled = (bucket: Bucket, now: number): number =>
    Math.min(perMinute, bucket.tokens + (now - bucket.updatedMs) * ratePerMs);
  /** When the last address to run out of tokens has one again. */
  let blockingUntilMs = 0;
  return {
    mayBlock: () => clock.now().getTime() < blockingUntilMs,
    blockedFor(address) {
      const bucket = buckets.get(address);
      if (!bucket) return 0;
      const tokens = refilled(bucket, clock.now().getTime());
      if (tokens >= 1) return 0;
      return Math.max(1, Math.ceil((1 - tokens) / ratePerMs / 1000));
    },
    failed(address) {
      const now = clock.now().getTime();
      const bucket = buckets.get(address);
      const tokens = bucket ? refilled(bucket, now) : perMinute;
      buckets.delete(address);
      if (buckets.size >= maxKeys) {
        const oldest = buckets.keys().next();
        if (!oldest.done) buckets.delete(oldest.value);
      }
      const left = Math.max(0, tokens - 1);
      buckets.set(address, { tokens: left, updatedMs: now });
      if (left < 1) blockingUntilMs = Math.max(blockingUntilMs, now + (1 - left) / ratePerMs);
    },
  };
}

/** What the Bun server reports for a connection (`server.requestIP(request)`). */
export interface SocketAddress {
  readonly address: string;
}

/**
 * The address a request is attributed to. With `trustProxyHops` 0 it is the TCP peer. With N > 0
 * the N-th entry from the right of X-Forwarded-For is used: each trusted proxy appends the address
 * it received from, so the entry N places from the right was written by the outermost trusted
 * proxy and cannot be forged by the client. Missing or short headers fall back to the peer.
 */
export function clientAddress(
  request: Request,
  peer: SocketAddress | null | undefined,
  trustProxyHops: number,
): string {
  const socket = peer?.address ?? "unknown";
  if (trustProxyHops <= 0) return socket;
  const forwarded = (request.headers.get("x-forwarded-for") ?? "")
    .split(",")
    .map((part) => part.trim())
    .filter((part) => part !== "");
  return forwarded[forwarded.length - trustProxyHops] ?? socket;
}
