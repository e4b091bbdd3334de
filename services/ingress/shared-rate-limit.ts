import type { KV } from "@nats-io/kv";
import type { Clock } from "../../shared/clock/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { createRateLimiter, type RateLimiter } from "./rate-limit.ts";

/** A client's budget as every ingress replica sees it: a token bucket kept in KV `sy_rate`. */
interface SharedBucket {
  readonly tokens: number;
  /** Epoch ms of the last refill. */
  readonly at: number;
}

/** Tokens an ingress holds for one client, leased from the shared bucket. */
interface Allowance {
  tokens: number;
  expiresAt: number;
}

export interface SharedRateLimiter {
  /** Takes one token for `key`; resolves 0 when allowed, else the seconds to wait. */
  take(key: string, perMinute: number): Promise<number>;
}

export interface SharedRateLimiterDeps {
  readonly kv: KV;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Share of a minute's budget one lease takes (default 1%). */
  readonly leaseFraction?: number;
  /** How long leased tokens stay usable (default 2 s): unused ones lapse, never pile up. */
  readonly leaseMs?: number;
  /** Longest wait for the shared bucket before falling back to this replica's own (50 ms). */
  readonly timeoutMs?: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Per-client rate limits shared by every ingress replica (docs/api.md, "Rate limits"). The budget
 * is one token bucket per client in KV; a replica leases small chunks of it (1% of a minute's
 * worth, at least one token) with compare-and-set and spends them locally, so a request costs a
 * KV round trip only once per chunk. Over-admission is bounded by one chunk per replica, and
 * leased tokens lapse after 2 s. Concurrent requests of one client share one lease in flight.
 *
 * When the shared bucket cannot be reached in time (NATS slow or away), the replica falls back to
 * its own in-memory bucket at the full rate: it fails open, admitting up to replicas × the
 * limit, rather than refusing work it could accept (a run is only accepted once NATS stores it).
 */
export function createSharedRateLimiter(deps: SharedRateLimiterDeps): SharedRateLimiter {
  const leaseFraction = deps.leaseFraction ?? 0.01;
  const leaseMs = deps.leaseMs ?? 2_000;
  const timeoutMs = deps.timeoutMs ?? 50;
  const local = new Map<string, Allowance>();
  const inFlight = new Map<string, Promise<number>>();
  const fallback: RateLimiter = createRateLimiter(deps.clock);
  let warned = 0;

  /** Takes up to `want` tokens from the shared bucket; how many it got, or the wait (negative). */
  const lease = async (name: string, perMinute: number, want: number): Promise<number> => {
    // KV keys allow letters, digits and `-/_=.`; limiter keys look like `client:<id>`.
    const key = name.replaceAll(":", ".");
    const ratePerMs = perMinute / 60_000;
    for (let round = 0; round < 5; round++) {
      const entry = await deps.kv.get(key);
      const now = deps.clock.now().getTime();
      const stored =
        entry?.operation === "PUT" && entry.length > 0
          ? (JSON.parse(decoder.decode(entry.value)) as SharedBucket)
          : { tokens: perMinute, at: now };
      const tokens = Math.min(perMinute, stored.tokens + Math.max(0, now - stored.at) * ratePerMs);
      const granted = Math.min(want, Math.floor(tokens));
      const next = encoder.encode(JSON.stringify({ tokens: tokens - granted, at: now }));
      try {
        if (entry === null) await deps.kv.create(key, next);
        else await deps.kv.update(key, next, entry.revision);
      } catch {
        continue; // another replica took from it meanwhile: read again
      }
      return granted > 0 ? granted : -Math.max(1, Math.ceil((1 - tokens) / ratePerMs / 1000));
    }
    throw new Error("the shared rate budget kept changing");
  };

  const withTimeout = <T>(work: Promise<T>): Promise<T> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("shared rate budget timed out")), timeoutMs);
      work.then(
        (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(err);
        },
      );
    });

  const refill = async (key: string, perMinute: number): Promise<number> => {
    const want = Math.max(1, Math.ceil(perMinute * leaseFraction));
    const got = await withTimeout(lease(key, perMinute, want));
    if (got > 0) local.set(key, { tokens: got, expiresAt: deps.clock.now().getTime() + leaseMs });
    return got;
  };

  return {
    async take(key, perMinute) {
      for (;;) {
        const allowance = local.get(key);
        if (
          allowance &&
          allowance.tokens >= 1 &&
          deps.clock.now().getTime() < allowance.expiresAt
        ) {
          allowance.tokens -= 1;
          return 0;
        }
        let pending = inFlight.get(key);
        if (pending === undefined) {
          pending = refill(key, perMinute).finally(() => inFlight.delete(key));
          inFlight.set(key, pending);
        }
        let got: number;
        try {
          got = await pending;
        } catch (err) {
          if (Date.now() - warned > 60_000) {
            warned = Date.now();
            deps.logger.warn(
              { err: (err as Error).message },
              "shared rate budget unreachable; limiting per replica",
            );
          }
          return fallback.take(key, perMinute);
        }
        if (got <= 0) return -got;
      }
    },
  };
}
