import { describe, expect, test } from "bun:test";
import { createCancelSignals } from "../../services/executor/cancels.ts";

describe("the executor's cancel signals", () => {
  test("given work on a job, when the job is cancelled, then its signal aborts", () => {
    const signals = createCancelSignals();
    const work = signals.track("job_a");
    expect(work.signal.aborted).toBe(false);
    signals.abort("job_a");
    expect(work.signal.aborted).toBe(true);
  });

  test("given a cancel that came before the work started, then the work's signal is aborted at once", () => {
    const signals = createCancelSignals();
    signals.abort("job_a");
    expect(signals.track("job_a").signal.aborted).toBe(true);
    expect(signals.track("job_b").signal.aborted).toBe(false);
  });

  test("the newest 4,096 cancels are remembered, the oldest dropped first", () => {
    const signals = createCancelSignals();
    for (let i = 0; i <= 4_096; i++) signals.abort(`job_${i}`);
    expect(signals.track("job_0").signal.aborted).toBe(false);
    expect(signals.track("job_1").signal.aborted).toBe(true);
    expect(signals.track("job_4096").signal.aborted).toBe(true);
  });
});
