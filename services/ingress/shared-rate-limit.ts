import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { createBucket } from "../../shared/bus/index.ts";
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
  /** Share of a minute's budget one lease takes at least (default 1%). */
  readonly leaseFraction?: number;
  /** How long leased tokens stay usable (default 2 s): unused ones lapse, never pile up. */
  readonly leaseMs?: number;
  /**
   * Longest wait for the shared bucket before falling back to this replica's own (default 1 s):
   * long enough that a busy process or a KV leader change does not trip it.
   */
  readonly timeoutMs?: number;
  /**
   * False while NATS is known to be away (the hub connection's status): fall back at once rather
   * than wait `timeoutMs` per refill for a bucket that cannot answer. Default: always true.
   */
  readonly connected?: () => boolean;
}

/** KV bucket of the shared client budgets. */
export const RATE_BUCKET = "sy_rate";
/**
 * A budget untouched for a minute is full again, so an entry may go after that: idle clients
 * cost no storage. 90 s leaves a margin for clocks.
 */
const RATE_ENTRY_TTL_MS = 90_000;

/** Opens (creating when missing) the bucket of shared client budgets. */
export function openRateBucket(
  nc: NatsConnection,
  options: { readonly replicas: number },
): Promise<KV> {
  return createBucket(new Kvm(nc), RATE_BUCKET, {
    history: 1,
    replicas: options.replicas,
    ttl: RATE_ENTRY_TTL_MS,
    storage: "file",
  });
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Per-client rate limits shared by every ingress replica (docs/api.md, "Rate limits"). The budget
 * is one token bucket per client in KV; a replica leases chunks of it (1% of a minute's worth, or
 * as many as are waiting up to 10%) with compare-and-set and spends them locally, so a request
 * costs a KV round trip only once per chunk. Leased tokens have left the shared bucket, so the
 * replicas together never admit more than the limit; unused ones lapse after 2 s (a client may
 * get slightly less, never more). Concurrent requests of one client share one lease in flight.
 *
 * When the shared bucket cannot be reached in time (NATS slow or away), the replica falls back to
 * its own in-memory bucket at the full rate: it fails open, admitting up to replicas × the
 * limit, rather than refusing work it could accept (a run is only accepted once NATS stores it).
 */
export function createSharedRateLimiter(deps: SharedRateLimiterDeps): SharedRateLimiter {
  const leaseFraction = deps.leaseFraction ?? 0.01;
  const leaseMs = deps.leaseMs ?? 2_000;
  const timeoutMs = deps.timeoutMs ?? 1_000;
  const local = new Map<string, Allowance>();
  const inFlight = new Map<string, Promise<number>>();
  const fallback: RateLimiter = createRateLimiter(deps.clock);
  let warned = 0;
  const connected = deps.connected ?? (() => true);

  const limitLocally = (key: string, perMinute: number, reason: string) => {
    if (Date.now() - warned > 60_000) {
      warned = Date.now();
      deps.logger.warn({ err: reason }, "shared rate budget unreachable; limiting per replica");
    }
    return fallback.take(key, perMinute);
  };

  /** Takes up to `want` tokens from the shared bucket; how many it got, or the wait (negative). */
  const lease = async (name: string, perMinute: number, want: number): Promise<number> => {
    // KV keys allow letters, digits and `-/_=.`; limiter keys look like `client:<id>`.
    const key = name.replaceAll(":", ".");
    const ratePerMs = perMinute / 60_000;
    for (let round = 0; round < 20; round++) {
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

  /** Takers waiting for a lease, per key: a lease covers them all when it can. */
  const waiting = new Map<string, number>();

  const credit = (key: string, tokens: number) => {
    const now = deps.clock.now().getTime();
    const held = local.get(key);
    const usable = held && now < held.expiresAt ? held.tokens : 0;
    local.set(key, { tokens: usable + tokens, expiresAt: now + leaseMs });
  };

  const refill = (key: string, perMinute: number): Promise<number> => {
    // At least 1% of the minute; as many as are waiting, up to 10%, so a burst costs a few
    // round trips rather than one per 1%.
    const least = Math.max(1, Math.ceil(perMinute * leaseFraction));
    const most = Math.max(least, Math.ceil(perMinute * 0.1));
    const want = Math.min(most, Math.max(least, waiting.get(key) ?? 0));
    // A lease that completes after the timeout still credits its tokens: taken, so not lost.
    const work = lease(key, perMinute, want).then((got) => {
      if (got > 0) credit(key, got);
      return got;
    });
    return withTimeout(work);
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
        if (!connected()) return limitLocally(key, perMinute, "NATS is disconnected");
        waiting.set(key, (waiting.get(key) ?? 0) + 1);
        let pending = inFlight.get(key);
        if (pending === undefined) {
          pending = refill(key, perMinute).finally(() => inFlight.delete(key));
          inFlight.set(key, pending);
        }
        let got: number;
        try {
          got = await pending;
        } catch (err) {
          return limitLocally(key, perMinute, (err as Error).message);
        } finally {
          const left = (waiting.get(key) ?? 1) - 1;
          if (left > 0) waiting.set(key, left);
          else waiting.delete(key);
        }
        if (got <= 0) return -got;
      }
    },
  };
}
