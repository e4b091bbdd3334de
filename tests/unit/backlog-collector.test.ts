import { describe, expect, test } from "bun:test";
import {
  BACKLOG_COLLECT_EVERY_MS,
  BACKLOG_MAX_SHARE,
  BACKLOG_MIN_PENDING,
  createBacklogCollector,
} from "../../shared/projection/index.ts";

interface Given {
  readonly minPending?: number;
  readonly everyMs?: number;
  readonly maxShare?: number;
  /** How long each collection takes on the test's clock (default 0). */
  readonly collectMs?: number;
}

/** A collector on a clock the test moves, counting its collections and the time they took. */
function given({ collectMs = 0, ...settings }: Given = {}) {
  let now = 1_000;
  let collections = 0;
  let counted = 0;
  let tookMs = 0;
  const collector = createBacklogCollector({
    collect: () => {
      collections++;
      now += collectMs;
    },
    now: () => now,
    collected: (took) => {
      counted++;
      tookMs += took;
    },
    ...settings,
  });
  return {
    collector,
    advance: (ms: number) => {
      now += ms;
    },
    now: () => now,
    collections: () => collections,
    counted: () => counted,
    tookMs: () => tookMs,
  };
}

describe("backlog collector", () => {
  test("a lane that keeps up never makes the process collect", () => {
    const { collector, advance, collections } = given();
    for (let round = 0; round < 1_000; round++) {
      collector.roundDone(BACKLOG_MIN_PENDING - 1);
      advance(BACKLOG_COLLECT_EVERY_MS);
    }
    expect(collections()).toBe(0);
  });

  test("a lane folding a backlog makes it collect at once, then at most once a period", () => {
    const { collector, advance, collections, counted } = given();
    collector.roundDone(BACKLOG_MIN_PENDING);
    expect(collections()).toBe(1);
    // Rounds every 10 ms through three periods: one collection per period.
    for (let t = 10; t <= 3 * BACKLOG_COLLECT_EVERY_MS; t += 10) {
      advance(10);
      collector.roundDone(100_000);
    }
    expect(collections()).toBe(4);
    expect(counted()).toBe(4);
  });

  test("the lanes of a process share the pace: two lanes behind collect no more than one", () => {
    const { collector, advance, collections } = given();
    for (let t = 0; t < 10 * BACKLOG_COLLECT_EVERY_MS; t += 5) {
      collector.roundDone(50_000); // the view's lane
      collector.roundDone(80_000); // the index's lane
      advance(5);
    }
    expect(collections()).toBe(10);
  });

  test("a backlog folded away stops the collections", () => {
    const { collector, advance, collections } = given();
    const pendings = [9_000, 6_000, 3_000, 1_500, 500, 0, 0, 0];
    for (const pending of pendings) {
      collector.roundDone(pending);
      advance(BACKLOG_COLLECT_EVERY_MS);
    }
    expect(collections()).toBe(3);
  });

  test("its threshold and period can be set", () => {
    const { collector, advance, collections } = given({ minPending: 10, everyMs: 1_000 });
    collector.roundDone(9);
    collector.roundDone(10);
    advance(999);
    collector.roundDone(10);
    advance(1);
    collector.roundDone(10);
    expect(collections()).toBe(2);
  });

  test("collections slower than the period take at most their share of the process's time", () => {
    // A large heap (or a profiler attached): each collection takes longer than the period.
    const { collector, advance, now, collections, tookMs } = given({ collectMs: 200 });
    const start = now();
    while (now() - start < 60_000) {
      collector.roundDone(100_000);
      advance(10);
    }
    expect(collections()).toBeGreaterThan(0);
    expect(tookMs()).toBe(collections() * 200);
    // Spaced by the period alone they would take all of it.
    expect(tookMs() / (now() - start)).toBeLessThanOrEqual(BACKLOG_MAX_SHARE + 0.01);
    expect(tookMs() / (now() - start)).toBeGreaterThan(BACKLOG_MAX_SHARE - 0.05);
  });

  test("collections faster than the period keep to the period", () => {
    // 35 ms, as one of a 25-MB heap: its rest (3 × 35 ms) ends before the period does.
    const { collector, advance, now, collections } = given({ collectMs: 35 });
    const start = now();
    while (now() - start < 10 * BACKLOG_COLLECT_EVERY_MS) {
      collector.roundDone(100_000);
      advance(5);
    }
    expect(collections()).toBe(10);
  });

  test("its share of the process's time can be set", () => {
    const { collector, advance, now, tookMs } = given({ collectMs: 200, maxShare: 0.5 });
    const start = now();
    while (now() - start < 60_000) {
      collector.roundDone(100_000);
      advance(10);
    }
    expect(tookMs() / (now() - start)).toBeLessThanOrEqual(0.51);
    expect(tookMs() / (now() - start)).toBeGreaterThan(BACKLOG_MAX_SHARE + 0.1);
  });
});
