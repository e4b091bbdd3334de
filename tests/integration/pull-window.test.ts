/**
 * The single-replica pull window (shared/bus/pull-window.ts) waits 120 s with 30 s heartbeats, on
 * the assumption that a consumer with no leader to lose needs no heartbeat to resume: after
 * nats-server restarts, nats.js pulls again on reconnect. Checked here with the hub's two ways of
 * pulling, consume() (read models, callback) and the fetch loop (executor), against a real server
 * SIGKILLed and restarted: a message published after the restart arrives in seconds, not after two
 * missed heartbeats (60 s). (The replicated window is checked on a cluster in
 * tests/deploy/nats-cluster.test.ts.)
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import {
  AckPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { pullWindow, SINGLE_REPLICA_PULL } from "../../shared/bus/index.ts";
import { runPullLoop } from "../../shared/worker/index.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

let nats: TestNats;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "PW", subjects: ["pw.>"] });
  for (const name of ["consumed", "fetched"]) {
    await jsm.consumers.add("PW", {
      durable_name: name,
      ack_policy: AckPolicy.Explicit,
      filter_subject: `pw.${name}`,
    });
  }
});

afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

test("a single server's consumer gets the single-replica window, and both pulls resume after a SIGKILL and restart", async () => {
  const consumed = await js.consumers.get("PW", "consumed");
  const window = pullWindow(await consumed.info(true));
  expect(window).toEqual(SINGLE_REPLICA_PULL);
  expect(window.expires).toBe(120_000);

  const seen: string[] = [];
  const take = (msg: JsMsg) => {
    seen.push(msg.string());
    msg.ack();
  };
  const messages = await consumed.consume({ max_messages: 16, ...window });
  const consuming = (async () => {
    for await (const msg of messages) take(msg);
  })();
  const fetched = await js.consumers.get("PW", "fetched");
  const loop = runPullLoop({
    consumer: fetched,
    free: () => 16,
    slotFreed: () => new Promise(() => {}),
    onMessage: take,
    onError: () => {},
    expiresMs: window.expires,
    idleHeartbeatMs: window.idle_heartbeat,
  });
  try {
    await js.publish("pw.consumed", "before-c");
    await js.publish("pw.fetched", "before-f");
    await waitFor("both before the restart", () => seen.length === 2);

    await nats.kill("SIGKILL");
    await nats.restart();
    await waitFor("the reconnect", () => !nc.isClosed() && nc.info !== undefined, {
      timeoutMs: 10_000,
    });
    await waitFor(
      "publishing after the restart",
      async () => {
        await js.publish("pw.consumed", "after-c");
        await js.publish("pw.fetched", "after-f");
        return true;
      },
      { timeoutMs: 10_000, intervalMs: 200 },
    );
    // Well under two missed heartbeats (60 s): the pulls were made again on reconnect.
    await waitFor(
      "both after the restart",
      () => seen.includes("after-c") && seen.includes("after-f"),
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    expect(seen.filter((s) => s.startsWith("before"))).toHaveLength(2);
  } finally {
    await messages.close();
    await consuming;
    await loop.stop();
  }
}, 40_000);
