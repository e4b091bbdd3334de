import { expect, test } from "bun:test";
import {
  describePlacement,
  type LeaderPlacement,
  leaderLimit,
  streamsToStepDown,
} from "../../shared/bus/index.ts";

const placement = (leaders: Record<string, string>): LeaderPlacement => ({
  leaders: new Map(Object.entries(leaders)),
  nodes: ["n1", "n2", "n3"],
});

test("no node leads more than ceil(P/N)", () => {
  expect(leaderLimit(4, 3)).toBe(2);
  expect(leaderLimit(16, 3)).toBe(6);
  expect(leaderLimit(3, 3)).toBe(1);
});

test("all four streams on one node: the two beyond the limit step down, the last by name", () => {
  const all = placement({ S_P0: "n1", S_P1: "n1", S_P2: "n1", S_P3: "n1" });
  expect(streamsToStepDown(all)).toEqual(["S_P2", "S_P3"]);
  expect(describePlacement(all)).toBe("n1=4 n2=0 n3=0 (at most 2 each: unbalanced)");
});

test("a spread placement asks for nothing", () => {
  const spread = placement({ S_P0: "n1", S_P1: "n2", S_P2: "n3", S_P3: "n1" });
  expect(streamsToStepDown(spread)).toEqual([]);
  expect(describePlacement(spread)).toBe("n1=2 n2=1 n3=1 (at most 2 each: balanced)");
});

test("a stream without a leader is named and not counted", () => {
  const electing = placement({ S_P0: "", S_P1: "n2", S_P2: "n3", S_P3: "n1" });
  expect(streamsToStepDown(electing)).toEqual([]);
  expect(describePlacement(electing)).toContain("1 without a leader");
});
