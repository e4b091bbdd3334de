/**
 * createBucket (shared/bus/buckets.ts) and ensureStream (streams.ts) against a real nats-server:
 * processes that start together all open the bucket or stream, and a real subject conflict is
 * thrown by its JetStream code.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  createBucket,
  ensureStream,
  isJsError,
  retryWhileSettingUp,
} from "../../shared/bus/index.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";

let nats: TestNats;
let ncs: NatsConnection[];

beforeAll(async () => {
  nats = await startNats();
  ncs = await Promise.all(Array.from({ length: 8 }, () => connect({ servers: nats.url })));
});

afterAll(async () => {
  for (const nc of ncs ?? []) await nc.close();
  await nats?.[Symbol.asyncDispose]();
});

describe("createBucket", () => {
  test("eight processes creating the same buckets at once all open them", async () => {
    for (let round = 0; round < 10; round++) {
      const opened = await Promise.all(
        ncs.map((nc) =>
          createBucket(new Kvm(nc), `together_${round}`, { history: 1, storage: "file" }),
        ),
      );
      const names = await Promise.all(opened.map(async (kv) => (await kv.status()).bucket));
      expect(names).toEqual(ncs.map(() => `together_${round}`));
    }
  });

  test("eight processes creating a bucket at once each write to it at once: every first write lands", async () => {
    // nats-server 2.9.10 can answer a concurrent create before the stream listens on its subjects:
    // without retryWhileSettingUp, 14 of these 1,600 first writes found no responders.
    for (let round = 0; round < 200; round++) {
      const bucket = `written_${round}`;
      await Promise.all(
        ncs.map(async (nc, i) => {
          const kv = await createBucket(new Kvm(nc), bucket, { history: 1, storage: "file" });
          await retryWhileSettingUp(() => kv.put(`k${i}`, "x"));
        }),
      );
      const kv = await new Kvm(nats.nc).open(bucket);
      expect((await kv.status()).values).toBe(ncs.length);
    }
  }, 60_000);

  test("a stream that holds the bucket's subjects: the overlap is thrown, by its code", async () => {
    const jsm = await jetstreamManager(nats.nc);
    await jsm.streams.add({ name: "SQUATTER", subjects: ["$KV.taken.>"] });
    const err = await createBucket(new Kvm(nats.nc), "taken", { history: 1 }).catch(
      (e: unknown) => e,
    );
    expect(isJsError(err, "streamSubjectOverlap")).toBe(true);
  });

  test("ensureStream: eight processes at once; a real overlap is thrown by its code", async () => {
    for (let round = 0; round < 10; round++) {
      const config = { name: `TOGETHER_${round}`, subjects: [`together.${round}.>`] };
      await Promise.all(ncs.map(async (nc) => ensureStream(await jetstreamManager(nc), config)));
    }
    const jsm = await jetstreamManager(nats.nc);
    expect((await jsm.streams.names().next()).length).toBeGreaterThanOrEqual(10);
    const err = await ensureStream(jsm, { name: "INTRUDER", subjects: ["together.0.x"] }).catch(
      (e: unknown) => e,
    );
    expect(isJsError(err, "streamSubjectOverlap")).toBe(true);
  });
});
