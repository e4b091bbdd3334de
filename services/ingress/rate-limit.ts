import type { Clock } from "../../shared/clock/index.ts";

export interface RateLimiter {
  /** Takes one token for `key`; returns 0 when allowed, else the seconds to wait. */
  take(key: string, perMinute: number): number;
}

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/**
 * Token buckets per key, refilled continuously at `perMinute / 60` per second with a burst of one
 * minute's worth. In memory per ingress replica: N replicas admit up to N× the rate (docs/api.md).
 */
export function createRateLimiter(clock: Clock, maxKeys = 100_000): RateLimiter {
  const buckets = new Map<string, Bucket>();
  return {
    take(key, perMinute) {
      const now = clock.now().getTime();
      let bucket = buckets.get(key);
      if (!bucket) {
        if (buckets.size >= maxKeys) buckets.clear();
        bucket = { tokens: perMinute, updatedMs: now };
        buckets.set(key, bucket);
      }
      const ratePerMs = perMinute / 60_000;
      bucket.tokens = Math.min(perMinute, bucket.tokens + (now - bucket.updatedMs) * ratePerMs);
      bucket.updatedMs = now;
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerMs / 1000));
    },
  };
}
