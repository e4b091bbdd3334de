import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  DEFAULT_NATS_PLAN,
  type PartitionSizingInputs,
  partitionInputsFromFixture,
  partitionInputsFromRun,
  partitionLimits,
  queueLimit,
  renderPartitionedSizing,
  sizePartitioned,
  splitNatsCost,
  streamGroup,
} from "../../bench/lib/partition-sizing.ts";
import {
  DEFAULT_PLAN,
  foldLimit,
  formatBytes,
  inputsFromFixture,
  inputsFromResults,
  renderSizing,
  sizeFor,
  usableCoresPerPod,
} from "../../bench/lib/sizing.ts";

const ROOT = join(import.meta.dir, "../..");

const inputs = {
  utilisation: 0.5,
  coresPerPod: { ingress: 2, executor: 1, callback: 1, "read-models": 2 },
  retentionSec: 10 * 86_400,
  cpuUsPerJob: {
    ingress: 100,
    executor: 200,
    callback: 300,
    "read-models": 250,
    "nats-server": 400,
  },
  storedBytesPerJob: { events: 1_500, views: 500 },
} as const;

describe("sizing model", () => {
  test("given CPU per job, replicas follow rate × µs ÷ utilisation ÷ cores per pod, at least two", () => {
    const row = sizeFor(1_000, inputs);
    // ingress 1000 × 100 µs = 0.1 core ÷ 0.5 = 0.2 → 2 (the floor); callback 0.6 ÷ 1 → 2.
    expect(row.replicas).toEqual({ ingress: 2, executor: 2, callback: 2, "read-models": 2 });
    expect(row.natsLeaderCores).toBeCloseTo(0.8);
    expect(row.natsFollowerCores).toBeCloseTo(0.4);
    expect(row.beyond).toBeUndefined();
    const big = sizeFor(10_000, inputs);
    expect(big.replicas.callback).toBe(6); // 10,000 × 300 µs = 3 cores ÷ 0.5
    expect(big.replicas.ingress).toBe(2); // 10,000 × 100 µs = 1 core ÷ 0.5 = 2 cores ÷ 2 per pod
  });

  test("each NATS node stores rate × bytes per job × retention, whatever the replication", () => {
    const row = sizeFor(1_000, inputs);
    // 1,000 jobs/s × 2,000 B = 2 MB/s: 172.8 GB a day, 1.728 TB over 10 days.
    expect(row.storedBytesPerDayPerNode).toBe(172_800_000_000);
    expect(row.storedBytesPerNode).toBe(1_728_000_000_000);
    // Three events and one view per job, each on its own subject.
    expect(row.retainedMessages).toBe(1_000 * 4 * 10 * 86_400);
    expect(sizeFor(2_000, inputs).storedBytesPerNode).toBe(2 * row.storedBytesPerNode);
    expect(renderSizing([row], inputs.retentionSec)).toContain("| 173 GB / 1.7 TB |");
    expect(renderSizing([row], inputs.retentionSec)).toContain("over 10 d");
  });

  test("bytes print in decimal units", () => {
    expect(formatBytes(597)).toBe("597 B");
    expect(formatBytes(1_791.2)).toBe("1.8 kB");
    expect(formatBytes(206_000_000_000)).toBe("206 GB");
    expect(formatBytes(6_190_000_000_000)).toBe("6.2 TB");
  });

  test("past what one read-models process's event loop folds, the row says the model stops holding", () => {
    // 1 s ÷ 250 µs (the projector's and the indexer's work together) × 0.5 of one core, although
    // the pod's limit is 2 cores: the two folds share one JavaScript thread.
    expect(foldLimit(inputs)).toBe(2_000);
    expect(sizeFor(2_000, inputs).beyond).toBeUndefined();
    expect(sizeFor(2_001, inputs).beyond).toContain(
      "one active read-models process folds at most about 2,000 jobs/s",
    );
    // Active/standby at any rate: more replicas would only wait.
    expect(sizeFor(50_000, inputs).replicas["read-models"]).toBe(2);
    const table = renderSizing([sizeFor(50_000, inputs)], inputs.retentionSec);
    expect(table).toContain("| 50,000 |");
    expect(table).toContain("| 2 (1 active) |");
    expect(usableCoresPerPod("read-models", inputs)).toBe(1);
    expect(usableCoresPerPod("ingress", inputs)).toBe(2);
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
                  "read-models": 0.25,
                  "nats-server": 0.4,
                } as Record<string, number>,
                jetstream: {
                  cost: {
                    streams: {
                      SWITCHYARD_EVENTS: { bytes: 1_500_000 },
                      KV_sy_jobs: { bytes: 500_000 },
                      KV_sy_rate: { bytes: 150 },
                    },
                  },
                },
              },
            },
          },
        },
      },
    };
    const read = inputsFromResults(results, inputs);
    expect(read.cpuUsPerJob).toEqual(inputs.cpuUsPerJob);
    expect(read.storedBytesPerJob).toEqual(inputs.storedBytesPerJob);
    expect(() => inputsFromResults({ scenarios: {} }, inputs)).toThrow("no e2e closed loop");
    const partial = structuredClone(results);
    delete (partial.scenarios.e2e.hub.closed.phase.cpuSec as Record<string, number>).callback;
    expect(() => inputsFromResults(partial, inputs)).toThrow("no callback figure");
    // A run of the read models apart: their sum stands for the one process.
    const apart = structuredClone(results);
    const apartCpu = apart.scenarios.e2e.hub.closed.phase.cpuSec;
    delete apartCpu["read-models"];
    Object.assign(apartCpu, { projector: 0.15, indexer: 0.1 });
    expect(inputsFromResults(apart, inputs).cpuUsPerJob["read-models"]).toBeCloseTo(250);
    delete apartCpu.indexer;
    expect(() => inputsFromResults(apart, inputs)).toThrow("no read-models figure");
    const noBytes = structuredClone(results);
    delete (noBytes.scenarios.e2e.hub.closed.phase as { jetstream?: unknown }).jetstream;
    expect(() => inputsFromResults(noBytes, inputs)).toThrow("no events figure");
  });

  test("the committed inputs reproduce the table docs/deploy.md shows", () => {
    const fixture = JSON.parse(readFileSync(join(ROOT, "bench/sizing-inputs.json"), "utf8"));
    expect(fixture.cpuUsPerJob.source).toContain("2026-11-27 05:43");
    expect(fixture.storedBytesPerJob.source).toContain("SWITCHYARD_EVENTS");
    const fromFixture = inputsFromFixture(fixture, DEFAULT_PLAN);
    const table = renderSizing(
      [1_000, 10_000, 50_000].map((rate) => sizeFor(rate, fromFixture)),
      DEFAULT_PLAN.retentionSec,
    );
    const deploy = readFileSync(join(ROOT, "docs/deploy.md"), "utf8");
    expect(deploy).toContain(table);
    const { views: _views, ...noViews } = fixture.storedBytesPerJob;
    expect(() =>
      inputsFromFixture({ ...fixture, storedBytesPerJob: noViews }, DEFAULT_PLAN),
    ).toThrow("no views figure");
    expect(() =>
      inputsFromFixture(
        { ...fixture, cpuUsPerJob: { ...fixture.cpuUsPerJob, ingress: -1 } },
        DEFAULT_PLAN,
      ),
    ).toThrow("no ingress figure");
  });
});

describe("partitioned sizing model", () => {
  const partitioned: PartitionSizingInputs = {
    utilisation: 0.5,
    coresPerPod: { ingress: 2, executor: 1, callback: 1, "read-models": 2 },
    retentionSec: 10 * 86_400,
    coresPerNatsNode: 4,
    streamReplicas: 3,
    cpuUsPerJob: { ingress: 100, executor: 50, callback: 100, "read-models": 250 },
    // 150 µs per job over 15 operations per job: 10 µs each; one queued job (3 operations) 30 µs.
    nats: { usPerJob: { events: 100, views: 20, single: 30 }, usPerOp: 10 },
    storedBytesPerJob: { events: 1_500, views: 500 },
  };

  test("stream names fall into their groups, whatever the partition", () => {
    expect(streamGroup("SWITCHYARD_EVENTS")).toBe("events");
    expect(streamGroup("SWITCHYARD_EVENTS_P12")).toBe("events");
    expect(streamGroup("KV_sy_jobs")).toBe("views");
    expect(streamGroup("KV_sy_jobs_p3")).toBe("views");
    expect(streamGroup("SWITCHYARD_CALLBACKS")).toBe("single");
    expect(streamGroup("KV_sy_leases")).toBe("single");
  });

  test("nats-server's µs per job are split in proportion to each stream group's operations", () => {
    const split = splitNatsCost(
      {
        streams: {
          SWITCHYARD_EVENTS_P0: { stored: 30, bytes: 0, publishes: 30, directGets: 0 },
          KV_sy_jobs_p0: { stored: 10, bytes: 0, publishes: 10, directGets: 10 },
          SWITCHYARD_CALLBACKS: { stored: 0, bytes: 0, publishes: 0, directGets: 0 },
        },
        consumers: {
          "SWITCHYARD_EVENTS_P0/projector": { deliveries: 30, acks: 20, pulls: 0 },
          "SWITCHYARD_CALLBACKS/callback-queue": { deliveries: 0, acks: 0, pulls: 20 },
        },
      },
      120,
      10,
    );
    // 80 + 20 + 20 operations: 120 µs split 80 / 20 / 20; 10 jobs × 120 µs ÷ 120 operations.
    expect(split.usPerJob.events).toBeCloseTo(80);
    expect(split.usPerJob.views).toBeCloseTo(20);
    expect(split.usPerJob.single).toBeCloseTo(20);
    expect(split.usPerOp).toBeCloseTo(10);
  });

  test("one partition takes what its slowest single-process part takes at the planned utilisation", () => {
    const limits = Object.fromEntries(partitionLimits(partitioned).map((l) => [l.what, l]));
    expect(limits["one partition's read-models fold"]?.jobsPerSec).toBe(2_000); // 1 s ÷ 250 µs × 0.5
    expect(limits["one partition's events stream leader"]?.jobsPerSec).toBe(5_000);
    // 1 s ÷ (3 operations × 10 µs) × 0.5.
    expect(queueLimit(partitioned).jobsPerSec).toBe(16_666);
  });

  test("partitions follow the rate ÷ one partition's limit, rounded up to a multiple of the NATS nodes", () => {
    const row = sizePartitioned(10_000, partitioned);
    // NATS: 10,000 × 150 µs = 1.5 cores ÷ 0.5 = 3 at the leaders, × 2 with two half-busy followers.
    expect(row.natsCores).toBeCloseTo(6);
    expect(row.natsNodes).toBe(3);
    // 10,000 ÷ 2,000 per partition = 5 → 6, a multiple of 3 nodes.
    expect(row.partitions).toBe(6);
    // 10,000 × 250 µs ÷ 0.5 = 5 cores, one per process whatever the pod's limit (one event loop).
    expect(row.replicas["read-models"]).toBe(5);
    expect(row.queuesHold).toBe(true);
    expect(row.reason).toBe(
      "1,667 jobs/s per partition, within one partition's read-models fold's 2,000; even if every job went through one work queue, within its leader's 16,666",
    );
    // R3 over 3 nodes: each holds all of it; 10,000 × 2,000 B × 10 days.
    expect(row.storedBytesPerNode).toBe(10_000 * 2_000 * 10 * 86_400);
    const small = sizePartitioned(100, partitioned);
    expect(small.partitions).toBe(3); // 2 replicas each fold at least one; 3 nodes lead one each
  });

  test("past a single work queue's leader, the row names the work queues as the next limit", () => {
    const row = sizePartitioned(30_000, partitioned);
    expect(row.queuesHold).toBe(false);
    expect(row.partitions).toBe(15); // 30,000 ÷ 2,000, a multiple of 3 nodes
    expect(row.reason).toContain(
      "next limit: one work-queue stream's leader (SWITCHYARD_TASKS, SWITCHYARD_CALLBACKS, SWITCHYARD_DEADLINES: single whatever P is), about 16,666 jobs/s",
    );
    const table = renderPartitionedSizing([row], formatBytes, partitioned.retentionSec);
    expect(table).toContain("| 30,000 | 15 |");
    expect(table).toContain("| yes: 2,000 jobs/s per partition");
  });

  test("the committed partitioned inputs reproduce the table docs/deploy.md shows", () => {
    const fixture = JSON.parse(readFileSync(join(ROOT, "bench/sizing-inputs.json"), "utf8"));
    expect(fixture.partitioned.source).toContain("2026-11-27 06:01 UTC");
    const plan = { ...DEFAULT_PLAN, ...DEFAULT_NATS_PLAN };
    const fromFixture = partitionInputsFromFixture(fixture, plan);
    const rows = [10_000, 50_000, 100_000].map((rate) => sizePartitioned(rate, fromFixture));
    const deploy = readFileSync(join(ROOT, "docs/deploy.md"), "utf8");
    expect(deploy).toContain(renderPartitionedSizing(rows, formatBytes, plan.retentionSec));
    const { perOperation: _op, ...noOp } = fixture.partitioned.natsUsPerJob;
    expect(() =>
      partitionInputsFromFixture(
        { partitioned: { ...fixture.partitioned, natsUsPerJob: noOp } },
        plan,
      ),
    ).toThrow("no perOperation figure");
  });

  test("inputs come from a partitions run's largest P, and a missing figure is named", () => {
    const phase = {
      units: 1_000,
      cpuSec: {
        ingress: 0.1,
        executor: 0.05,
        callback: 0.1,
        "read-models": 0.25,
        "nats-server": 0.12,
      } as Record<string, number>,
      jetstream: {
        cost: {
          streams: {
            SWITCHYARD_EVENTS_P0: { stored: 30, bytes: 700_000, publishes: 30, directGets: 0 },
            SWITCHYARD_EVENTS_P1: { stored: 30, bytes: 800_000, publishes: 30, directGets: 0 },
            KV_sy_jobs_p0: { stored: 10, bytes: 500_000, publishes: 10, directGets: 0 },
          },
          consumers: {},
        },
      },
    };
    const runs = [
      { partitions: 1, closed: { phase: { ...phase, units: 1 } } },
      { partitions: 8, closed: { phase } },
    ];
    const read = partitionInputsFromRun(runs, { ...DEFAULT_PLAN, ...DEFAULT_NATS_PLAN });
    expect(read.cpuUsPerJob["read-models"]).toBeCloseTo(250);
    expect(read.nats.usPerJob.events).toBeCloseTo((60 / 70) * 120); // 60 of 70 operations
    expect(read.nats.usPerOp).toBeCloseTo((1_000 * 120) / 70);
    expect(read.storedBytesPerJob).toEqual({ events: 1_500, views: 500 });
    expect(() => partitionInputsFromRun(runs, partitioned, 16)).toThrow(
      "no partitions run at P = 16",
    );
    // A run that measured idle only has no closed loop to size from.
    expect(() => partitionInputsFromRun([{ partitions: 16 }], partitioned)).toThrow(
      "no partitions run with an e2e closed loop",
    );
    // A run of the read models apart counts as their sum; one with neither names the figure.
    const { "read-models": _rm, ...noReadModels } = phase.cpuSec;
    const apart = { ...noReadModels, projector: 0.15, indexer: 0.1 };
    const apartRuns = [{ partitions: 8, closed: { phase: { ...phase, cpuSec: apart } } }];
    expect(partitionInputsFromRun(apartRuns, partitioned).cpuUsPerJob["read-models"]).toBeCloseTo(
      250,
    );
    const neither = [{ partitions: 8, closed: { phase: { ...phase, cpuSec: noReadModels } } }];
    expect(() => partitionInputsFromRun(neither, partitioned)).toThrow("no read-models figure");
  });
});
