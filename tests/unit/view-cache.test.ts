import { describe, expect, test } from "bun:test";
import type { JobView } from "../../shared/domain/index.ts";
import { createJobViewCache, GenerationalMap, isSettledView } from "../../shared/jobs/index.ts";

const base: JobView = {
  job_id: "job_a",
  client_id: "c",
  request_id: "r1",
  route: "x.echo",
  status: "queued",
  created_at: "2026-11-22T00:00:00.000Z",
  updated_at: "2026-11-22T00:00:00.000Z",
  fingerprint: "f",
  seq: 1,
};
const done: JobView = { ...base, status: "done", output: "hi", seq: 2 };

function clock() {
  let ms = 1_000_000;
  return { now: () => ms, advance: (by: number) => (ms += by) };
}

describe("isSettledView", () => {
  test("final without a pending callback is settled; anything else is not", () => {
    expect(isSettledView(done)).toBe(true);
    expect(isSettledView({ ...base, status: "rejected" })).toBe(true);
    expect(isSettledView(base)).toBe(false);
    expect(isSettledView({ ...base, status: "running" })).toBe(false);
    expect(isSettledView({ ...done, callback: { status: "pending", attempts: 0 } })).toBe(false);
    expect(isSettledView({ ...done, callback: { status: "delivered", attempts: 1 } })).toBe(true);
    expect(isSettledView({ ...done, callback: { status: "failed", attempts: 8 } })).toBe(true);
  });
});

describe("createJobViewCache", () => {
  test("keeps settled views only, so unsettled ones are always read fresh", () => {
    const t = clock();
    const cache = createJobViewCache({ now: t.now });
    cache.remember("c.job_a", 1, base);
    expect(cache.get("c.job_a")).toBeUndefined();
    cache.remember("c.job_b", 3, { ...done, callback: { status: "pending", attempts: 0 } });
    expect(cache.get("c.job_b")).toBeUndefined();
    cache.remember("c.job_a", 2, done);
    expect(cache.get("c.job_a")).toEqual(done);
    expect(cache.size).toBe(1);
  });

  test("an entry answers for maxAgeMs after it was read, then must be read again", () => {
    const t = clock();
    const cache = createJobViewCache({ now: t.now, maxAgeMs: 30_000 });
    cache.remember("c.job_a", 2, done);
    t.advance(30_000);
    expect(cache.get("c.job_a")).toEqual(done);
    t.advance(1);
    expect(cache.get("c.job_a")).toBeUndefined();
    // A fresh read confirms it for another period.
    cache.remember("c.job_a", 2, done);
    expect(cache.get("c.job_a")).toEqual(done);
  });

  test("an older revision never replaces a newer one", () => {
    const t = clock();
    const cache = createJobViewCache({ now: t.now });
    const delivered: JobView = { ...done, callback: { status: "delivered", attempts: 1 }, seq: 5 };
    cache.remember("c.job_a", 7, delivered);
    cache.remember("c.job_a", 4, done);
    expect(cache.get("c.job_a")).toEqual(delivered);
  });

  test("is bounded: the older generation is dropped whole", () => {
    const t = clock();
    const cache = createJobViewCache({ now: t.now, maxEntries: 10 });
    for (let i = 0; i < 100; i++) cache.remember(`c.job_${i}`, 1, { ...done, job_id: `job_${i}` });
    expect(cache.size).toBeLessThanOrEqual(10);
    expect(cache.get("c.job_99")?.job_id).toBe("job_99");
    expect(cache.get("c.job_0")).toBeUndefined();
  });
});

describe("GenerationalMap", () => {
  test("keeps the newest half-budget generations, forgets deleted keys in both", () => {
    const map = new GenerationalMap<number>(4);
    map.set("a", 1);
    map.set("b", 2); // young is full (2): it becomes old
    map.set("c", 3);
    expect([map.get("a"), map.get("b"), map.get("c")]).toEqual([1, 2, 3]);
    map.set("d", 4); // young (c, d) becomes old; a and b are dropped
    expect(map.get("a")).toBeUndefined();
    expect(map.get("d")).toBe(4);
    map.delete("c");
    expect(map.get("c")).toBeUndefined();
    expect(map.size).toBe(1);
  });
});

describe("invalidation (a settled view rewritten, announced by the projector)", () => {
  test("drops the entry, and refuses an older revision that a read in flight offers afterwards", () => {
    const t = clock();
    const cache = createJobViewCache({ now: t.now });
    cache.remember("c.job_a", 5, done);
    cache.invalidate("c.job_a", 7);
    expect(cache.get("c.job_a")).toBeUndefined();
    // A KV read that started before the rewrite returns revision 5 after the notice.
    cache.remember("c.job_a", 5, done);
    expect(cache.get("c.job_a")).toBeUndefined();
    const retried = { ...done, retried_as: "job_b", seq: 3 };
    cache.remember("c.job_a", 7, retried);
    expect(cache.get("c.job_a")).toEqual(retried);
  });

  test("a late notice of an older revision leaves a newer entry alone", () => {
    const cache = createJobViewCache({ now: clock().now });
    cache.remember("c.job_a", 9, done);
    cache.invalidate("c.job_a", 7);
    expect(cache.get("c.job_a")).toEqual(done);
  });

  test("clear drops every entry", () => {
    const cache = createJobViewCache({ now: clock().now });
    cache.remember("c.job_a", 2, done);
    cache.remember("c.job_b", 3, { ...done, job_id: "job_b" });
    cache.clear();
    expect(cache.get("c.job_a")).toBeUndefined();
    expect(cache.get("c.job_b")).toBeUndefined();
    expect(cache.size).toBe(0);
  });
});
