import { describe, expect, test } from "bun:test";
import {
  BACKLOG_COLLECT_EVERY_MS,
  BACKLOG_MIN_PENDING,
  createBacklogCollector,
} from "../../shared/projection/index.ts";

/** A collector on a clock the test moves, counting its collections. */
function given(settings: { readonly minPending?: number; readonly everyMs?: number } = {}) {
  let now = 1_000;
  let collections = 0;
  let counted = 0;
  const collector = createBacklogCollector({
    collect: () => {
      collections++;
    },
    now: () => now,
    collected: () => {
      counted++;
    },
    ...settings,
  });
  return {
    collector,
    advance: (ms: number) => {
      now += ms;
    },
    collections: () => collections,
    counted: () => counted,
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
});
