import { describe, expect, test } from "bun:test";
import { JetStreamApiError } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { loadSessionKey } from "../../services/admin-api/auth.ts";
import { loadMetaSecret } from "../../shared/bus/index.ts";
import { loadJobIdKey } from "../../shared/ids/index.ts";

// Hub-wide secrets in sy_meta (the job-id key, the console session key) against a bucket whose
// reads lag: on an R3 bucket a read may reach a replica that has not applied the key yet (seen on
// nats-server 2.9.10 in a rolling restart on the cluster, before sy_meta read from its leader).

const KEY = Buffer.alloc(32, 7).toString("base64");
const keyExists = () =>
  new JetStreamApiError({ code: 400, err_code: 10071, description: "wrong last sequence: 1" });

function laggingBucket(emptyReads: number, createError: () => Error = keyExists) {
  let reads = 0;
  let creates = 0;
  const bucket = {
    async get() {
      reads++;
      return reads <= emptyReads ? null : { operation: "PUT", string: () => KEY };
    },
    async create() {
      creates++;
      throw createError(); // the key exists on the leader
    },
  };
  return { kv: bucket as unknown as KV, reads: () => reads, creates: () => creates };
}

describe("hub-wide secrets in sy_meta", () => {
  test("given reads that find nothing at first, the job-id key is read again instead of failing start-up", async () => {
    const bucket = laggingBucket(3);
    const key = await loadJobIdKey(bucket.kv, 1);
    expect(Buffer.from(key).toString("base64")).toBe(KEY);
    expect(bucket.creates()).toBe(1);
    expect(bucket.reads()).toBe(4);
  });

  test("the console session key goes the same way (the R3 start-up failure seen in CI)", async () => {
    const bucket = laggingBucket(2);
    expect((await loadSessionKey(bucket.kv)).toString("base64")).toBe(KEY);
    expect(bucket.creates()).toBe(1);
  });

  test("given a bucket that never shows the key, it gives up naming the key and the bucket", async () => {
    const bucket = laggingBucket(Number.POSITIVE_INFINITY);
    await expect(loadJobIdKey(bucket.kv, 1)).rejects.toThrow(
      "job_id_key could not be read or created in the meta bucket (sy_meta)",
    );
    expect(bucket.reads()).toBe(21);
  });

  test("a create that fails for another reason than a lost race is not taken for one", async () => {
    const bucket = laggingBucket(Number.POSITIVE_INFINITY, () => new Error("timeout"));
    await expect(loadMetaSecret(bucket.kv, { key: "k", retryDelayMs: 1 })).rejects.toThrow(
      "timeout",
    );
    expect(bucket.reads()).toBe(1);
  });
});
