import { expect, test } from "bun:test";
import { pairRatios } from "../../bench/lib/index-scenario.ts";

const loop = (cpu: number, readModels: number, nats: number) => ({
  cpuPerJobUs: cpu,
  readModelsUs: readModels,
  natsServerUs: nats,
  completedPerSec: 1_000,
  drainSec: 1,
});

test("index pair: the whole hub's ratio, and the share of the processes the index runs in", () => {
  // The other services were 100 µs busier in the loop with the index (the machine's noise): the
  // whole-hub ratio counts it, the attributed one only the read models' process's and nats-server's extra.
  const pair = pairRatios(loop(1_100, 300, 400), loop(900, 220, 380));
  expect(pair.cpuRatio).toBe(1.222);
  expect(pair.attributedRatio).toBe(1.111);
});

test("index pair: less CPU with the index (noise) gives a ratio below 1, not a negative share", () => {
  const pair = pairRatios(loop(880, 200, 370), loop(900, 220, 380));
  expect(pair.cpuRatio).toBe(0.978);
  expect(pair.attributedRatio).toBe(0.967);
});
