import { describe, expect, test } from "bun:test";
import { cpuByProcess, medianRun, roundRatios } from "../../bench/lib/e2e-rounds.ts";
import type { PhaseFigures } from "../../bench/lib/phase.ts";

/** A closed loop of 10,000 jobs whose processes spent these CPU seconds. */
const loop = (label: string, cpuSec: Record<string, number>) => ({
  label,
  phase: { wallSec: 3, drainSec: 0.3, units: 10_000, unit: "job", cpuSec } satisfies PhaseFigures,
});

describe("cpuByProcess: which process moved between rounds", () => {
  test("each process's CPU µs per job, round by round, only the system's own", () => {
    const runs = [loop("one", { a: 3, b: 1, other: 5 }), loop("two", { a: 2, b: 1.5 })];
    expect(cpuByProcess(runs, ["a", "b"])).toEqual({ a: [300, 200], b: [100, 150] });
  });
});

describe("medianRun: the round each system's e2e figures come from", () => {
  test("three rounds: the middle one by the system's CPU per job, every round's figure kept", () => {
    const runs = [
      loop("slow", { a: 3, b: 2 }),
      loop("fast", { a: 2, b: 1 }),
      loop("middle", { a: 2.5, b: 1.5 }),
    ];
    const { median, cpuUsPerUnit } = medianRun(runs, ["a", "b"]);
    expect(median.label).toBe("middle");
    expect(cpuUsPerUnit).toEqual([500, 300, 400]);
  });

  test("only the system's own processes count", () => {
    // Round 2 is the cheapest for `a` alone, though another process made it look busy.
    const runs = [
      loop("one", { a: 3, other: 0 }),
      loop("two", { a: 1, other: 9 }),
      loop("three", { a: 2, other: 0 }),
    ];
    expect(medianRun(runs, ["a"]).median.label).toBe("three");
    expect(medianRun(runs, ["a", "other"]).median.label).toBe("one");
  });

  test("an even count takes the lower middle; one round is its own median", () => {
    const runs = [
      loop("w", { a: 4 }),
      loop("x", { a: 1 }),
      loop("y", { a: 3 }),
      loop("z", { a: 2 }),
    ];
    expect(medianRun(runs, ["a"]).median.label).toBe("z");
    expect(medianRun([loop("only", { a: 1 })], ["a"]).median.label).toBe("only");
  });

  test("no rounds is an error, not an undefined median", () => {
    expect(() => medianRun([], ["a"])).toThrow("at least one run");
  });
});

describe("roundRatios: the hub against a peer, round by round", () => {
  /** A round's loop: its rate and its processes' CPU seconds over 10,000 jobs. */
  const round = (completedPerSec: number, cpuSec: Record<string, number>) => ({
    completedPerSec,
    phase: { wallSec: 3, drainSec: 0.3, units: 10_000, unit: "job", cpuSec } satisfies PhaseFigures,
  });

  test("each round pairs the two loops it ran; jobs per CPU-s is the peer's CPU per job over the hub's", () => {
    const hub = [round(2_000, { h: 5 }), round(1_500, { h: 6 }), round(2_200, { h: 4 })];
    const peer = [round(2_500, { p: 4 }), round(1_500, { p: 6 }), round(2_000, { p: 5 })];
    const r = roundRatios({ loops: hub, procs: ["h"] }, { loops: peer, procs: ["p"] });
    expect(r.donePerSec).toEqual([0.8, 1, 1.1]);
    expect(r.jobsPerCpuSec).toEqual([0.8, 1, 1.25]);
    expect(r.median).toEqual({ donePerSec: 1, jobsPerCpuSec: 1 });
  });

  test("only each system's own processes count, and a round only one system ran is left out", () => {
    const hub = [round(1_000, { h: 2, other: 9 }), round(1_000, { h: 2 })];
    const peer = [round(1_000, { p: 3 })];
    const r = roundRatios({ loops: hub, procs: ["h"] }, { loops: peer, procs: ["p"] });
    expect(r.jobsPerCpuSec).toEqual([1.5]);
    expect(r.donePerSec).toEqual([1]);
  });
});
