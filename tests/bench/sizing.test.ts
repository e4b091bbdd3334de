import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  DEFAULT_PLAN,
  foldLimit,
  formatBytes,
  inputsFromFixture,
  inputsFromResults,
  renderSizing,
  sizeFor,
} from "../../bench/lib/sizing.ts";

const ROOT = join(import.meta.dir, "../..");

const inputs = {
  utilisation: 0.5,
  coresPerPod: { ingress: 2, executor: 1, callback: 1, projector: 1, indexer: 1 },
  retentionSec: 10 * 86_400,
  cpuUsPerJob: {
    ingress: 100,
    executor: 200,
    callback: 300,
    projector: 250,
    indexer: 150,
    "nats-server": 400,
  },
  storedBytesPerJob: { events: 1_500, views: 500 },
} as const;

describe("sizing model", () => {
  test("given CPU per job, replicas follow rate × µs ÷ utilisation ÷ cores per pod, at least two", () => {
    const row = sizeFor(1_000, inputs);
    // ingress 1000 × 100 µs = 0.1 core ÷ 0.5 = 0.2 → 2 (the floor); callback 0.6 ÷ 1 → 2.
    expect(row.replicas).toEqual({
      ingress: 2,
      executor: 2,
      callback: 2,
      projector: 2,
      indexer: 2,
    });
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

  test("past what the slower single-writer fold keeps up with, the row says the model stops holding", () => {
    expect(foldLimit(inputs)).toEqual({ service: "projector", jobsPerSec: 2_000 }); // 1 s ÷ 250 µs × 0.5
    expect(sizeFor(2_000, inputs).beyond).toBeUndefined();
    expect(sizeFor(2_001, inputs).beyond).toContain("one active projector");
    // A slower indexer sets the limit instead, and stays active/standby at any rate.
    const slowIndexer = { ...inputs, cpuUsPerJob: { ...inputs.cpuUsPerJob, indexer: 500 } };
    expect(foldLimit(slowIndexer)).toEqual({ service: "indexer", jobsPerSec: 1_000 });
    expect(sizeFor(1_001, slowIndexer).beyond).toContain("one active indexer");
    expect(sizeFor(50_000, slowIndexer).replicas.indexer).toBe(2);
    expect(renderSizing([sizeFor(50_000, inputs)], inputs.retentionSec)).toContain("| 50,000 |");
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
                  indexer: 0.15,
                  "nats-server": 0.4,
                },
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
    const noBytes = structuredClone(results);
    delete (noBytes.scenarios.e2e.hub.closed.phase as { jetstream?: unknown }).jetstream;
    expect(() => inputsFromResults(noBytes, inputs)).toThrow("no events figure");
  });

  test("the committed inputs reproduce the table docs/deploy.md shows", () => {
    const fixture = JSON.parse(readFileSync(join(ROOT, "bench/sizing-inputs.json"), "utf8"));
    expect(fixture.cpuUsPerJob.source).toContain("2026-11-26 04:35");
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
