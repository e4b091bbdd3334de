import { describe, expect, test } from "bun:test";
import { createHash, createHmac } from "node:crypto";
import { createRateLimiter } from "../../services/ingress/rate-limit.ts";
import { manualClock } from "../../shared/clock/index.ts";
import { canonicalJson, requestFingerprint } from "../../shared/domain/index.ts";
import { createJobIdDeriver, idBytes, JOB_ID_PATTERN, randomIds } from "../../shared/ids/index.ts";
import { parseTraceparent, traceparentFrom } from "../../shared/trace/index.ts";

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

  test("are the HMAC-SHA256 of `client\nrequest_id` every release has derived", () => {
    // Ids already in the stream must be derived again the same way, or a retry after an upgrade
    // would make a second job.
    const key = new Uint8Array(32).fill(7);
    for (const [client, request] of [
      ["acme", "r-1"],
      ["globex", "7f3c2a1e-0b9d-4c55-8e21-3d0f9a6b1c44"],
      ["é", "ключ"],
    ] as const) {
      const expected = createHmac("sha256", key)
        .update(client)
        .update("\n")
        .update(request)
        .digest("base64url")
        .slice(0, 22);
      expect(derive(client, request)).toBe(`job_${expected}`);
    }
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

  test("is the SHA-256 hex of the canonical text every release has written", () => {
    // Fingerprints are stored in run.requested events and audit hashes cover canonicalJson: the
    // text and the digest may not change.
    const body = {
      route: "echo",
      z: undefined,
      é: 1,
      Z: [1, undefined, null, { y: "\u2028", x: [] }],
      a: { nested: { b: true, a: 0.5 } },
    };
    const text = canonicalJson(body);
    expect(text).toBe(
      '{"Z":[1,,null,{"x":[],"y":"\u2028"}],"a":{"nested":{"a":0.5,"b":true}},"route":"echo","é":1}',
    );
    expect(requestFingerprint(body)).toBe(createHash("sha256").update(text).digest("hex"));
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

describe("random ids from the pool", () => {
  test("given many draws across pool refills, each has its length and none repeats", () => {
    const seen = new Set<string>();
    // 20,000 event ids is 320,000 bytes: about 78 refills of the 4 KiB pool.
    for (let i = 0; i < 20_000; i++) {
      const id = randomIds.next("evt");
      expect(id).toMatch(/^evt_[A-Za-z0-9_-]{22}$/);
      seen.add(id);
    }
    expect(seen.size).toBe(20_000);
    // A draw larger than the pool still gets all its bytes.
    expect(idBytes(10_000).length).toBe(10_000);
    expect(idBytes(3).length).toBe(3);
  });

  test("a made-up traceparent is valid, non-zero and new each time; a caller's is kept", () => {
    const a = traceparentFrom(undefined);
    const b = traceparentFrom(null);
    expect(parseTraceparent(a)).toBeDefined();
    expect(a).not.toBe(b);
    expect(parseTraceparent(a)?.traceId).not.toBe("0".repeat(32));
    const caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    expect(traceparentFrom(caller)).toBe(caller);
  });
});
