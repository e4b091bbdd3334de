/**
 * bench/compare.ts's arithmetic: a hub's CPU per job from a results file, and the summary of
 * interleaved pairs (medians per process, the pair ratios and the ratio of the medians).
 */
import { describe, expect, test } from "bun:test";
import {
  type ComparedResults,
  hubCostOf,
  median,
  summarizePairs,
} from "../../bench/lib/compare.ts";
import { runToEnd } from "../helpers/run.ts";

function results(cpuSec: Record<string, number>, hub?: string[]): ComparedResults {
  return {
    versions: { hub: "0.2.0 (abc1234)" },
    ...(hub ? { systems: { hub } } : {}),
    scenarios: { e2e: { hub: { closed: { phase: { units: 10_000, cpuSec } } } } },
  };
}

describe("hubCostOf", () => {
  test("counts the processes systems.hub names, per job in µs, and leaves the others out", () => {
    const cost = hubCostOf(
      results({ "nats-server": 1.2, ingress: 1, "read-models": 1.1, receiver: 0.4, ceiling: 0.1 }, [
        "nats-server",
        "ingress",
        "read-models",
      ]),
    );
    expect(cost.perProcess).toEqual({ "nats-server": 120, ingress: 100, "read-models": 110 });
    expect(cost.hub).toBeCloseTo(330, 6);
    expect(cost.tree).toBe("0.2.0 (abc1234)");
  });

  test("results written before systems named the hub: its processes by name, peers left out", () => {
    const cost = hubCostOf(
      results({ "nats-server": 1, projector: 0.9, indexer: 0.7, receiver: 0.4, "floor-nats": 2 }),
    );
    expect(Object.keys(cost.perProcess).sort()).toEqual(["indexer", "nats-server", "projector"]);
    expect(cost.hub).toBeCloseTo(260, 6);
  });

  test("a results file without the hub's closed loop is refused with a message", () => {
    expect(() => hubCostOf({})).toThrow(/no e2e closed loop/);
  });
});

describe("summarizePairs", () => {
  const cost = (hub: number, ingress: number) => ({
    tree: "t",
    perProcess: { ingress, "nats-server": hub - ingress },
    hub,
  });

  test("medians per process and whole hub, the pair ratios' median and range, the ratio of medians", () => {
    const s = summarizePairs([
      { candidate: cost(450, 90), baseline: cost(600, 100) },
      { candidate: cost(520, 100), baseline: cost(630, 110) },
      { candidate: cost(660, 130), baseline: cost(610, 120) },
    ]);
    expect(s.pairs).toBe(3);
    expect(s.candidate).toEqual({ ingress: 100, "nats-server": 420, "whole hub": 520 });
    expect(s.baseline["whole hub"]).toBe(610);
    expect(s.pairRatio.median).toBeCloseTo(520 / 630, 9);
    expect(s.pairRatio.min).toBeCloseTo(450 / 600, 9);
    expect(s.pairRatio.max).toBeCloseTo(660 / 610, 9);
    expect(s.ratioOfMedians).toBeCloseTo(520 / 610, 9);
  });

  test("no pairs is an error, not NaN", () => {
    expect(() => summarizePairs([])).toThrow(/no pairs/);
  });

  test("median of an even count is the mean of the middle two", () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe("bench/compare.ts settings", () => {
  const run = (env: Record<string, string>) =>
    runToEnd([process.execPath, "bench/compare.ts", "."], { env: { ...process.env, ...env } });

  test("a COMPARE_TOGETHER other than 0 or 1 stops it with a message naming the key", async () => {
    const { stderr, code } = await run({ COMPARE_TOGETHER: "yes" });
    expect(code).toBe(2);
    expect(stderr).toContain("COMPARE_TOGETHER must be 0 or 1; got 'yes'");
  });

  test("a COMPARE_PAIRS below 1 stops it with a message naming the key", async () => {
    const { stderr, code } = await run({ COMPARE_PAIRS: "0" });
    expect(code).toBe(2);
    expect(stderr).toContain("COMPARE_PAIRS must be a whole number of at least 1; got '0'");
  });
});
