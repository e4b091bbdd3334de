/**
 * The partitioned floor (bench/peer/floor-common.ts, floorLayout) is the hub's bound at P only if
 * it spreads the same jobs the way the hub does, and is the floor of every other scenario at P = 1.
 */
import { describe, expect, test } from "bun:test";
import { peerJobId } from "../../bench/peer/app.ts";
import {
  FLOOR_BUCKET,
  FLOOR_STREAM,
  floorLayout,
  floorPad,
  floorPartitionsFromEnv,
} from "../../bench/peer/floor-common.ts";
import { partitionOf } from "../../shared/jobs/index.ts";

const ids = Array.from({ length: 4000 }, (_, i) => peerJobId("bench", `req-${i}`));

describe("floor layout", () => {
  test("at P = 1 every name is the single floor's: stream, bucket, subjects", () => {
    const one = floorLayout(1);
    const id = ids[0] as string;
    expect(one.stream(0)).toBe(FLOOR_STREAM);
    expect(one.bucket(0)).toBe(FLOOR_BUCKET);
    expect(one.streamSubjects(0)).toBe("floor.>");
    expect(one.subject("run", id)).toBe(`floor.run.${id}`);
    expect(one.filter(0, "done")).toBe("floor.done.>");
    expect(one.partitionOf(id)).toBe(0);
    expect(floorLayout().partitions).toBe(1);
  });

  test("at P = 8 a job's events go to the partition the hub's partitionOf gives its hash", () => {
    const eight = floorLayout(8);
    for (const id of ids.slice(0, 200)) {
      const p = partitionOf(`job_${id}`, 8);
      expect(eight.partitionOf(id)).toBe(p);
      expect(eight.subject("done", id)).toBe(`floor.p${p}.done.${id}`);
      expect(eight.jobIdOf(eight.subject("cb", id))).toBe(id);
    }
    expect(eight.stream(3)).toBe("FLOOR_P3");
    expect(eight.bucket(3)).toBe("floor_jobs_p3");
    expect(eight.streamSubjects(3)).toBe("floor.p3.>");
    expect(eight.filter(3, "run")).toBe("floor.p3.run.>");
  });

  test("the benchmark's request ids spread evenly over 8 partitions", () => {
    const eight = floorLayout(8);
    const counts = new Array<number>(8).fill(0);
    for (const id of ids) counts[eight.partitionOf(id)] = (counts[eight.partitionOf(id)] ?? 0) + 1;
    // 500 per partition expected; a uniform hash stays well within ±20 % at 4,000 ids.
    for (const n of counts) expect(Math.abs(n - 500)).toBeLessThan(100);
  });

  test("a partition count below 1 or not whole is refused", () => {
    expect(() => floorLayout(0)).toThrow("partition count ≥ 1");
    expect(() => floorLayout(1.5)).toThrow("partition count ≥ 1");
    expect(floorPartitionsFromEnv(undefined)).toBe(1);
    expect(floorPartitionsFromEnv("8")).toBe(8);
    expect(() => floorPartitionsFromEnv("x")).toThrow("FLOOR_PARTITIONS");
  });
});

describe("FLOOR_PAD_BYTES", () => {
  test("no pad by default or at 0; a pad of exactly that many bytes; anything else is refused by name", () => {
    expect(floorPad(undefined)).toEqual({});
    expect(floorPad("0")).toEqual({});
    expect(floorPad("400").pad).toHaveLength(400);
    expect(() => floorPad("-1")).toThrow("FLOOR_PAD_BYTES");
    expect(() => floorPad("1.5")).toThrow("FLOOR_PAD_BYTES");
  });
});
