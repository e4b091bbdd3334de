import { describe, expect, test } from "bun:test";
import { createCatchUpCollector } from "../../shared/projection/index.ts";

/** A collector on a clock the test moves, counting its collections. */
function given(everyMs = 150) {
  let now = 0;
  let collections = 0;
  const collector = createCatchUpCollector({
    everyMs,
    now: () => now,
    collect: () => {
      collections++;
    },
  });
  return {
    collector,
    /** Ends a round on `lane` every 10 ms for `forMs`, full or not. */
    rounds(lane: ReturnType<typeof collector.lane>, o: { full: boolean; forMs: number }) {
      for (const end = now + o.forMs; now < end; now += 10) lane.roundEnded(o.full);
    },
    collections: () => collections,
  };
}

describe("catch-up collector", () => {
  test("a lane that keeps up never collects", () => {
    const { collector, rounds, collections } = given();
    rounds(collector.lane(), { full: false, forMs: 5_000 });
    expect(collections()).toBe(0);
  });

  test("full rounds for less than the interval collect nothing", () => {
    const { collector, rounds, collections } = given();
    const lane = collector.lane();
    rounds(lane, { full: true, forMs: 140 });
    rounds(lane, { full: false, forMs: 10 });
    rounds(lane, { full: true, forMs: 140 });
    expect(collections()).toBe(0);
  });

  test("a lane behind collects once per interval while it stays behind", () => {
    const { collector, rounds, collections } = given();
    const lane = collector.lane();
    rounds(lane, { full: true, forMs: 1_000 });
    // at 150, 300, ... 900 ms of the streak
    expect(collections()).toBe(6);
    rounds(lane, { full: false, forMs: 1_000 });
    expect(collections()).toBe(6);
  });

  test("a lane keeping up does not end another lane's catch-up", () => {
    const { collector, rounds, collections } = given();
    const behind = collector.lane();
    const keepingUp = collector.lane();
    for (let i = 0; i < 100; i++) {
      rounds(behind, { full: true, forMs: 10 });
      keepingUp.roundEnded(false);
    }
    expect(collections()).toBe(6);
  });

  test("lanes behind together share the interval", () => {
    const { collector, rounds, collections } = given();
    const view = collector.lane();
    const index = collector.lane();
    for (let i = 0; i < 100; i++) {
      view.roundEnded(true);
      rounds(index, { full: true, forMs: 10 });
    }
    expect(collections()).toBe(6);
  });
});
