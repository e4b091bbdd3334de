import { describe, expect, test } from "bun:test";
import { createRateLimiter } from "../../services/ingress/rate-limit.ts";
import { manualClock } from "../../shared/clock/index.ts";
import { canonicalJson, requestFingerprint } from "../../shared/domain/index.ts";
import { createJobIdDeriver, JOB_ID_PATTERN } from "../../shared/ids/index.ts";

describe("job ids", () => {
  const derive = createJobIdDeriver(new Uint8Array(32).fill(7));

  test("are stable per (client, request_id), URL-safe, and 132 bits", () => {
    const id = derive("acme", "r-1");
    expect(id).toMatch(JOB_ID_PATTERN);
    expect(derive("acme", "r-1")).toBe(id);
  });

  test("differ across clients and request ids, and with another key", () => {
    expect(derive("globex", "r-1")).not.toBe(derive("acme", "r-1"));
    expect(derive("acme", "r-2")).not.toBe(derive("acme", "r-1"));
    // The separator keeps ("ab","c") and ("a","bc") apart.
    expect(derive("ab", "c")).not.toBe(derive("a", "bc"));
    expect(createJobIdDeriver(new Uint8Array(32).fill(8))("acme", "r-1")).not.toBe(
      derive("acme", "r-1"),
    );
  });

  test("refuse a short key", () => {
    expect(() => createJobIdDeriver(new Uint8Array(16))).toThrow();
  });
});

describe("request fingerprint", () => {
  test("ignores key order, not values", () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }] })).toBe('{"a":[{"c":3,"d":2}],"b":1}');
    expect(requestFingerprint({ a: 1, b: "x" })).toBe(requestFingerprint({ b: "x", a: 1 }));
    expect(requestFingerprint({ a: 1 })).not.toBe(requestFingerprint({ a: 2 }));
  });
});

describe("rate limiter", () => {
  test("admits a minute's burst, then asks to wait, then refills", () => {
    const clock = manualClock("2026-01-01T00:00:00Z");
    const limiter = createRateLimiter(clock);
    for (let i = 0; i < 60; i++) expect(limiter.take("k", 60)).toBe(0);
    expect(limiter.take("k", 60)).toBe(1);
    expect(limiter.take("other", 60)).toBe(0);
    clock.advance(1_000);
    expect(limiter.take("k", 60)).toBe(0);
    expect(limiter.take("k", 60)).toBeGreaterThan(0);
  });
});
