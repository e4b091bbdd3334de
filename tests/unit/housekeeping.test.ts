import { describe, expect, test } from "bun:test";
import { dueBeats, type IndexPartitionState } from "../../services/indexer/index.ts";
import { createLogger } from "../../shared/log/index.ts";
import { createHousekeeping, type HousekeepingTimers } from "../../shared/projection/index.ts";

/** Timers the test fires by hand: how many are pending is what the scheduler armed. */
function manualTimers() {
  const pending = new Map<number, () => void>();
  let next = 1;
  let now = 0;
  const timers: HousekeepingTimers = {
    set(run) {
      const id = next++;
      pending.set(id, run);
      return id;
    },
    clear(handle) {
      pending.delete(handle as number);
    },
    now: () => now,
  };
  return {
    timers,
    pending: () => pending.size,
    /** Fires every pending timer at `at` and lets the ticks finish. */
    async fire(at: number) {
      now = at;
      const due = [...pending];
      pending.clear();
      for (const [, run] of due) run();
      await Bun.sleep(0);
      await Bun.sleep(0);
    },
  };
}

const logger = createLogger({ level: "silent", service: "test" });

describe("process-wide housekeeping", () => {
  test("any number of tasks share one timer; each runs once per tick with the tick's time", async () => {
    const clock = manualTimers();
    const housekeeping = createHousekeeping({ everyMs: 5_000, logger, timers: clock.timers });
    expect(housekeeping.armed()).toBe(false);
    const runs: string[] = [];
    for (let p = 0; p < 16; p++) {
      housekeeping.add({ name: `p${p}`, run: async (now) => void runs.push(`p${p}@${now}`) });
    }
    expect(clock.pending()).toBe(1);
    await clock.fire(5_000);
    expect(runs).toHaveLength(16);
    expect(runs.every((r) => r.endsWith("@5000"))).toBe(true);
    expect(clock.pending()).toBe(1);
    await clock.fire(10_000);
    expect(runs).toHaveLength(32);
    await housekeeping.stop();
    expect(clock.pending()).toBe(0);
  });

  test("no task, no timer; a failing task leaves the others running", async () => {
    const clock = manualTimers();
    const housekeeping = createHousekeeping({ everyMs: 1_000, logger, timers: clock.timers });
    let ran = 0;
    const removeFailing = housekeeping.add({
      name: "failing",
      run: async () => {
        throw new Error("store away");
      },
    });
    const removeCounting = housekeeping.add({ name: "counting", run: async () => void ran++ });
    await clock.fire(1_000);
    expect(ran).toBe(1);
    removeFailing();
    expect(housekeeping.armed()).toBe(true);
    removeCounting();
    expect(housekeeping.armed()).toBe(false);
    expect(clock.pending()).toBe(0);
    housekeeping.add({ name: "again", run: async () => void ran++ });
    expect(clock.pending()).toBe(1);
    await clock.fire(2_000);
    expect(ran).toBe(2);
  });

  test("a task removed and another added during a tick leaves exactly one timer", async () => {
    const clock = manualTimers();
    const housekeeping = createHousekeeping({ everyMs: 1_000, logger, timers: clock.timers });
    let remove = () => {};
    remove = housekeeping.add({
      name: "first",
      run: async () => {
        remove();
        housekeeping.add({ name: "second", run: async () => {} });
      },
    });
    await clock.fire(1_000);
    expect(clock.pending()).toBe(1);
    expect(housekeeping.armed()).toBe(true);
  });
});

describe("index heartbeats", () => {
  const partition = (
    p: number,
    state: { holding: boolean; lastWriteMs: number; pending?: number },
  ): IndexPartitionState => ({
    partition: p,
    holding: () => state.holding,
    owner: () => 10 + p,
    lastWriteMs: () => state.lastWriteMs,
    pending: () => state.pending ?? 0,
    beaten: () => {},
    fenced: () => {},
  });

  test("every led partition whose position is older than the heartbeat, in one write", () => {
    const beats = dueBeats(
      [
        partition(3, { holding: true, lastWriteMs: 0, pending: 7 }),
        partition(1, { holding: true, lastWriteMs: 5_000 }),
        partition(0, { holding: true, lastWriteMs: 9_000 }),
        partition(2, { holding: false, lastWriteMs: 0 }),
      ],
      10_000,
      5_000,
    );
    expect(beats).toEqual([
      { partition: 1, owner: 11, pending: 0 },
      { partition: 3, owner: 13, pending: 7 },
    ]);
  });

  test("nothing is due while every partition wrote within the heartbeat or is not led", () => {
    expect(
      dueBeats(
        [
          partition(0, { holding: true, lastWriteMs: 9_000 }),
          partition(1, { holding: false, lastWriteMs: 0 }),
        ],
        10_000,
        5_000,
      ),
    ).toEqual([]);
  });
});
