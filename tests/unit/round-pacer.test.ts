import { describe, expect, test } from "bun:test";
import { createRoundPacer, sharedRoundGapMs } from "../../shared/projection/index.ts";

describe("round pacer", () => {
  test("a runner alone, or without a pacer, keeps its own gap", () => {
    const pacer = createRoundPacer();
    expect(sharedRoundGapMs(undefined, { baseMs: 10, capMs: 100 })).toBe(10);
    expect(sharedRoundGapMs(pacer, { baseMs: 10, capMs: 100 })).toBe(10); // none folding yet
    pacer.join();
    expect(sharedRoundGapMs(pacer, { baseMs: 10, capMs: 100 })).toBe(10);
  });

  test("the gap grows with the runners folding, up to the cap", () => {
    const pacer = createRoundPacer();
    const leaves = Array.from({ length: 8 }, () => pacer.join());
    expect(pacer.folding()).toBe(8);
    expect(sharedRoundGapMs(pacer, { baseMs: 10, capMs: 100 })).toBe(80);
    expect(sharedRoundGapMs(pacer, { baseMs: 50, capMs: 100 })).toBe(100);
    // A cap below the base (no linger: a rebuild) leaves the base gap.
    expect(sharedRoundGapMs(pacer, { baseMs: 10, capMs: 0 })).toBe(10);
    for (const leave of leaves.slice(0, 6)) leave();
    expect(sharedRoundGapMs(pacer, { baseMs: 10, capMs: 100 })).toBe(20);
  });

  test("leaving twice counts once", () => {
    const pacer = createRoundPacer();
    const leave = pacer.join();
    pacer.join();
    leave();
    leave();
    expect(pacer.folding()).toBe(1);
  });
});
