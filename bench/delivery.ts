#!/usr/bin/env bun
/**
 * What one JetStream delivery costs the consuming process and nats-server: `bun bench/delivery.ts`.
 *
 * A private nats-server (random port, temporary store) holds DELIVERY_COUNT event-shaped messages
 * (a 560-byte JSON body with the headers an event append carries). Each round, a fresh pull
 * consumer per settlement reads them all through nats.js's `consume()`, as the hub's consumers do:
 *
 * - no acks (AckPolicy.None): the delivery alone;
 * - one ack per 100 deliveries (AckPolicy.All): the read models' shape, one ack per round;
 * - an ack per delivery (AckPolicy.Explicit): the executor's and the callback service's shape.
 *
 * Reported: µs of CPU per delivery of the consuming process (user + system) and of nats-server
 * (its /proc utime + stime, 10-ms ticks), the median of the rounds, the settlements interleaved in
 * each round. Publishing happens before any round and is not counted.
 * Env: DELIVERY_COUNT (default 60000), DELIVERY_ROUNDS (default 3).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AckPolicy, type JetStreamClient, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { headersOf, startNatsServer } from "../shared/nats/index.ts";
import { cpuSec, round, wholeNumberSetting } from "./lib/common.ts";
import { median } from "./lib/compare.ts";

const COUNT = wholeNumberSetting("DELIVERY_COUNT", 60_000, 1);
const ROUNDS = wholeNumberSetting("DELIVERY_ROUNDS", 3, 1);
const STREAM = "DELIVERY";

const SETTLEMENTS = {
  "no acks": { policy: AckPolicy.None, ackEvery: 0 },
  "an ack per 100 (AckAll)": { policy: AckPolicy.All, ackEvery: 100 },
  "an ack per delivery": { policy: AckPolicy.Explicit, ackEvery: 1 },
} as const;
type Settlement = keyof typeof SETTLEMENTS;

const body = new TextEncoder().encode(
  JSON.stringify({
    id: "evt_".padEnd(30, "0"),
    type: "run.requested",
    schema_version: 1,
    job_id: "job_".padEnd(44, "0"),
    client_id: "client-a",
    occurred_at: new Date(0).toISOString(),
    data: { route: "bench.echo", input: "x".repeat(40), callback_url: "http://127.0.0.1:1/cb" },
  }).padEnd(560, " "),
);

async function fill(js: JetStreamClient): Promise<void> {
  const inFlight: Promise<unknown>[] = [];
  for (let i = 0; i < COUNT; i++) {
    const headers = headersOf({ "Sy-Event-Type": "run.requested", "Nats-Msg-Id": `evt_${i}` });
    inFlight.push(js.publish(`delivery.p0.run.client-a.job_${i}`, body, { headers }));
    if (inFlight.length >= 256) await Promise.all(inFlight.splice(0));
  }
  await Promise.all(inFlight);
}

const storeDir = mkdtempSync(join(tmpdir(), "switchyard-delivery-"));
const server = await startNatsServer({ storeDir, env: process.env });
const nc = await connect({ servers: server.url, noAsyncTraces: true });
try {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  await jsm.streams.add({ name: STREAM, subjects: ["delivery.>"] });
  await fill(js);

  /** µs of CPU per delivery, this process's and the server's, for one fresh consumer. */
  const measure = async (settlement: Settlement, name: string) => {
    const { policy, ackEvery } = SETTLEMENTS[settlement];
    await jsm.consumers.add(STREAM, {
      durable_name: name,
      ack_policy: policy,
      max_ack_pending: 20_000,
    });
    const consumer = await js.consumers.get(STREAM, name);
    const server0 = cpuSec(server.pid) * 1e6;
    const client0 = process.cpuUsage();
    let n = 0;
    for await (const msg of await consumer.consume({ max_messages: 1_000 })) {
      n++;
      if (ackEvery > 0 && n % ackEvery === 0) msg.ack();
      if (n === COUNT) break;
    }
    await nc.flush();
    const client = process.cpuUsage(client0);
    const serverUs = cpuSec(server.pid) * 1e6 - server0;
    await jsm.consumers.delete(STREAM, name);
    return { client: (client.user + client.system) / COUNT, server: serverUs / COUNT };
  };

  const results = new Map<Settlement, { client: number[]; server: number[] }>();
  const names = Object.keys(SETTLEMENTS) as Settlement[];
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? names : [...names].reverse();
    for (const [i, settlement] of order.entries()) {
      const figures = await measure(settlement, `delivery_${r}_${i}`);
      const kept = results.get(settlement) ?? { client: [], server: [] };
      kept.client.push(figures.client);
      kept.server.push(figures.server);
      results.set(settlement, kept);
    }
  }
  console.log(
    `CPU per delivery, µs (median of ${ROUNDS} rounds of ${COUNT}): consumer | nats-server`,
  );
  for (const settlement of names) {
    const kept = results.get(settlement);
    if (!kept) continue;
    console.log(
      `  ${settlement.padEnd(26)} ${round(median(kept.client), 1)} | ${round(median(kept.server), 1)}`,
    );
  }
} finally {
  await nc.close();
  await server.stop();
  rmSync(storeDir, { recursive: true, force: true });
}
