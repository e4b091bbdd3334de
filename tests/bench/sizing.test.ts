import { describe, expect, test } from "bun:test";
import {
  inputsFromResults,
  projectorLimit,
  renderSizing,
  sizeFor,
} from "../../bench/lib/sizing.ts";

const inputs = {
  utilisation: 0.5,
  coresPerPod: { ingress: 2, executor: 1, callback: 1, projector: 1 },
  cpuUsPerJob: { ingress: 100, executor: 200, callback: 300, projector: 250, "nats-server": 400 },
} as const;

describe("sizing model", () => {
  test("given CPU per job, replicas follow rate × µs ÷ utilisation ÷ cores per pod, at least two", () => {
    const row = sizeFor(1_000, inputs);
    // ingress 1000 × 100 µs = 0.1 core ÷ 0.5 = 0.2 → 2 (the floor); callback 0.6 ÷ 1 → 2.
    expect(row.replicas).toEqual({ ingress: 2, executor: 2, callback: 2, projector: 2 });
    expect(row.natsLeaderCores).toBeCloseTo(0.8);
    expect(row.natsFollowerCores).toBeCloseTo(0.4);
    expect(row.beyond).toBeUndefined();
    const big = sizeFor(10_000, inputs);
    expect(big.replicas.callback).toBe(6); // 10,000 × 300 µs = 3 cores ÷ 0.5
    expect(big.replicas.ingress).toBe(2); // 10,000 × 100 µs = 1 core ÷ 0.5 = 2 cores ÷ 2 per pod
  });

  test("past what one active projector folds, the row says the model stops holding", () => {
    expect(projectorLimit(inputs)).toBe(2_000); // 1 s ÷ 250 µs × 0.5
    expect(sizeFor(2_000, inputs).beyond).toBeUndefined();
    expect(sizeFor(2_001, inputs).beyond).toContain("one active projector");
    expect(renderSizing([sizeFor(50_000, inputs)])).toContain("| 50,000 |");
  });

  test("inputs come from a results file's e2e closed loop, and a missing figure is named", () => {
    const results = {
      scenarios: {
        e2e: {
          hub: {
            closed: {
              phase: {
                units: 1_000,
                cpuSec: {
                  ingress: 0.1,
                  executor: 0.2,
                  callback: 0.3,
                  projector: 0.25,
                  "nats-server": 0.4,
                },
              },
            },
          },
        },
      },
    };
    const read = inputsFromResults(results, inputs);
    expect(read.cpuUsPerJob).toEqual(inputs.cpuUsPerJob);
    expect(() => inputsFromResults({ scenarios: {} }, inputs)).toThrow("no e2e closed loop");
    const partial = structuredClone(results);
    delete (partial.scenarios.e2e.hub.closed.phase.cpuSec as Record<string, number>).callback;
    expect(() => inputsFromResults(partial, inputs)).toThrow("callback");
  });
});
