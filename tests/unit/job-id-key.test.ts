import { describe, expect, test } from "bun:test";
import type { KV } from "@nats-io/kv";
import { loadJobIdKey } from "../../shared/ids/index.ts";

// loadJobIdKey against a bucket whose reads lag: on an R3 bucket a read may reach a replica that
// has not applied the key yet (seen on nats-server 2.9.10 in a rolling restart on the cluster).

const KEY = Buffer.alloc(32, 7).toString("base64");

function laggingBucket(emptyReads: number) {
  let reads = 0;
  let creates = 0;
  const bucket = {
    async get() {
      reads++;
      return reads <= emptyReads ? null : { operation: "PUT", string: () => KEY };
    },
    async create() {
      creates++;
      throw new Error("wrong last sequence: 1"); // the key exists on the leader
    },
  };
  return { kv: bucket as unknown as KV, reads: () => reads, creates: () => creates };
}

describe("the job-id key", () => {
  test("given reads that find nothing at first, it reads again instead of failing start-up", async () => {
    const bucket = laggingBucket(3);
    const key = await loadJobIdKey(bucket.kv, 1);
    expect(Buffer.from(key).toString("base64")).toBe(KEY);
    expect(bucket.creates()).toBe(1);
    expect(bucket.reads()).toBe(4);
  });

  test("given a bucket that never shows the key, it gives up naming the bucket", async () => {
    const bucket = laggingBucket(Number.POSITIVE_INFINITY);
    await expect(loadJobIdKey(bucket.kv, 1)).rejects.toThrow("sy_meta");
    expect(bucket.reads()).toBe(21);
  });
});
