/**
 * The hub's pull window (shared/bus/pull-window.ts) is 30 s with 15-s heartbeats for every
 * consumer. Checked here with the hub's two ways of pulling, consumeRecovering (read models,
 * callback, deadlines, cancels) and the fetch loop (executor, workers), against a real server
 * SIGKILLed and restarted: a message published after the restart arrives in seconds, not after
 * two missed heartbeats or a pull's expiry, also when the first server the clients reconnect to
 * has no JetStream.
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
import { type ConsumeRestart, consumeRecovering, HUB_PULL } from "../../shared/bus/index.ts";
import { startNatsServer } from "../../shared/nats/index.ts";
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

/** The hub's two ways of pulling, consume() and the fetch loop, both in HUB_PULL; what each took. */
async function startBothPulls() {
  const seen: string[] = [];
  const restarts: ConsumeRestart[] = [];
  const take = (msg: JsMsg) => {
    seen.push(msg.string());
    msg.ack();
  };
  const messages = await consumeRecovering({
    consumer: await js.consumers.get("PW", "consumed"),
    nc,
    maxMessages: 16,
    restarted: (why) => restarts.push(why),
  });
  const consuming = (async () => {
    for await (const msg of messages) take(msg);
  })();
  const loop = runPullLoop({
    consumer: await js.consumers.get("PW", "fetched"),
    nc,
    free: () => 16,
    slotFreed: () => new Promise(() => {}),
    onMessage: take,
    onError: () => {},
    expiresMs: HUB_PULL.expires,
    idleHeartbeatMs: HUB_PULL.idle_heartbeat,
  });
  return {
    seen,
    restarts,
    async stop() {
      await messages.close();
      await consuming;
      await loop.stop();
    },
  };
}

/** Publishes one message for each pull once the restarted server takes them. */
async function publishBoth(tag: string): Promise<void> {
  await waitFor(
    "publishing after the restart",
    async () => {
      await js.publish("pw.consumed", `${tag}-c`);
      await js.publish("pw.fetched", `${tag}-f`);
      return true;
    },
    { timeoutMs: 10_000, intervalMs: 200 },
  );
}

test("every hub consumer pulls for 30 s at most, and both pulls resume after a SIGKILL and restart", async () => {
  // nats.js retries a failed re-pull after a reconnect only after the pull's expiry: that bounds
  // how long a consumer can stall after a NATS restart.
  expect(HUB_PULL).toEqual({ expires: 30_000, idle_heartbeat: 15_000 });
  const pulls = await startBothPulls();
  const seen = pulls.seen;
  try {
    await js.publish("pw.consumed", "before-c");
    await js.publish("pw.fetched", "before-f");
    await waitFor("both before the restart", () => seen.length === 2);
    // An ack is a plain publish: killed before nats-server took (or stored) it, the message comes
    // again after the restart, as at-least-once delivery must. Wait until the server holds both.
    await waitFor("both acks taken", async () => {
      const infos = await Promise.all(
        ["consumed", "fetched"].map((name) => jsm.consumers.info("PW", name)),
      );
      return infos.every((i) => i.num_ack_pending === 0 && i.ack_floor.stream_seq > 0);
    });

    await nats.kill("SIGKILL");
    await nats.restart();
    await waitFor("the reconnect", () => !nc.isClosed() && nc.info !== undefined, {
      timeoutMs: 10_000,
    });
    await publishBoth("after");
    // Well under two missed heartbeats (30 s): the pulls were made again on reconnect.
    await waitFor(
      "both after the restart",
      () => seen.includes("after-c") && seen.includes("after-f"),
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    // Nothing before the kill is lost; one whose ack the SIGKILL caught before nats-server stored
    // it may come again (the hub's consumers are idempotent for exactly that).
    expect(new Set(seen.filter((s) => s.startsWith("before")))).toEqual(
      new Set(["before-c", "before-f"]),
    );
  } finally {
    await pulls.stop();
  }
}, 40_000);

test("a reconnect that finds no JetStream at first does not stall either pull", async () => {
  // After a reconnect nats.js alone re-pulls once it has read the consumer's info; when that read
  // fails it tries again after the pull's expiry (30 s: 35 s measured here), and a pull answered
  // 503 waits for two missed heartbeats. Here the clients reconnect first to a server without
  // JetStream (every read fails, every pull is answered 503), then the real one comes back: the
  // consume started again at the reconnect and after each 503, and the fetch loop's pull ended at
  // the reconnect and was retried, so both resume as soon as JetStream answers.
  const pulls = await startBothPulls();
  try {
    await nats.kill("SIGKILL");
    const bare = await startNatsServer({
      storeDir: nats.storeDir,
      port: nats.port,
      jetstreamInConfig: true,
      env: process.env,
    });
    await waitFor(
      "a reconnect to the server without JetStream",
      () => nc.info?.jetstream !== true,
      {
        timeoutMs: 10_000,
      },
    );
    await waitFor("the consume's pull answered 503 and started again", () =>
      pulls.restarts.includes("no_responders"),
    );
    expect(pulls.restarts[0]).toBe("reconnected");
    await bare.stop("SIGKILL");
    await nats.restart();
    await publishBoth("late");
    // Well under a pull's expiry (30 s), which is what nats.js alone waits here.
    await waitFor(
      "both after the restart",
      () => pulls.seen.includes("late-c") && pulls.seen.includes("late-f"),
      { timeoutMs: 15_000, intervalMs: 100 },
    );
  } finally {
    await pulls.stop();
  }
}, 60_000);

test("closing a recovering consume ends its iteration after what it was delivered", async () => {
  for (let i = 0; i < 5; i++) await js.publish("pw.consumed", `held-${i}`);
  const pulls = await startBothPulls();
  try {
    await waitFor("the five messages", () => pulls.seen.length === 5);
  } finally {
    // Would never resolve if the iteration did not end.
    await pulls.stop();
  }
  expect(pulls.seen).toEqual(["held-0", "held-1", "held-2", "held-3", "held-4"]);
  expect(pulls.restarts).toEqual([]);
});
