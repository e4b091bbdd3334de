#!/usr/bin/env bun
/**
 * What one JetStream publish costs the publishing process, per publish: `bun bench/publish-path.ts`.
 *
 * nats.js's `js.publish` makes a request per publish: a reply token, a timer, a deferred and a
 * `RequestError` built and dropped when the request ends. The hub publishes through
 * `muxPubAcks` (shared/nats/pub-ack-mux.ts): a plain publish whose PubAck comes back on one
 * wildcard reply subscription, matched in a map. Both publish the same 400-byte event, 64 in
 * flight, to a private nats-server (random port, temporary store), with no headers and with the
 * headers an event append carries (type, message id, expected last subject sequence, and the
 * job's traceparent, through the hub's `headersOf`).
 *
 * Reported: the process's CPU per publish (user + system, µs), the median of the rounds. The
 * server's CPU is not in it. Env: PUBLISH_COUNT (per round, default 50000), PUBLISH_ROUNDS
 * (default 3).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type JetStreamClient, jetstream, jetstreamManager, PubHeaders } from "@nats-io/jetstream";
import { connect, type MsgHdrs } from "@nats-io/transport-node";
import { headersOf, muxPubAcks, startNatsServer } from "../shared/nats/index.ts";
import { cpuSec, round } from "./lib/common.ts";

const COUNT = Number(process.env.PUBLISH_COUNT ?? 50_000);
const ROUNDS = Number(process.env.PUBLISH_ROUNDS ?? 3);
const IN_FLIGHT = 64;
const payload = new TextEncoder().encode(
  JSON.stringify({ type: "job.done", pad: "x".repeat(380) }),
);

/** A W3C trace context as the ingress makes one (55 characters). */
const TRACEPARENT = "00-ab012bc1ea4843573545e61696896a34-7d42c242523598f2-01";

type Publish = (i: number, headers?: MsgHdrs) => Promise<unknown>;

function natsPublisher(js: JetStreamClient): Publish {
  return (i, headers) => js.publish(`pp.j.${i}`, payload, headers ? { headers } : {});
}

/** The headers each publish carries: none, an event's own, or those and the append's check. */
const HEADER_SETS = {
  "": () => undefined,
  ", type + message id": (n: number) =>
    headersOf({ "Sy-Event-Type": "job.done", [PubHeaders.MsgIdHdr]: `evt_${n}` }),
  ", type + message id + expected sequence": (n: number) =>
    headersOf({
      "Sy-Event-Type": "job.done",
      [PubHeaders.MsgIdHdr]: `evt_${n}`,
      [PubHeaders.ExpectedLastSubjectSequenceHdr]: "0",
    }),
  // The hub's whole set: every event also carries its job's W3C trace context.
  ", + traceparent (the hub's event)": (n: number) =>
    headersOf({
      "Sy-Event-Type": "job.done",
      traceparent: TRACEPARENT,
      [PubHeaders.MsgIdHdr]: `evt_${n}`,
      [PubHeaders.ExpectedLastSubjectSequenceHdr]: "0",
    }),
} satisfies Record<string, (n: number) => MsgHdrs | undefined>;

/** µs of this process's and of nats-server's CPU per publish, `IN_FLIGHT` at a time. */
async function cpuPerPublish(deps: {
  readonly publish: Publish;
  readonly headers: (n: number) => MsgHdrs | undefined;
  readonly base: number;
  readonly serverPid: number;
}): Promise<{ client: number; server: number }> {
  const started = process.cpuUsage();
  const serverStarted = cpuSec(deps.serverPid);
  let i = 0;
  const lane = async () => {
    while (i < COUNT) {
      const n = deps.base + i++;
      await deps.publish(n, deps.headers(n));
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  const used = process.cpuUsage(started);
  return {
    client: (used.user + used.system) / COUNT,
    server: ((cpuSec(deps.serverPid) - serverStarted) * 1e6) / COUNT,
  };
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

const storeDir = mkdtempSync(join(tmpdir(), "switchyard-publish-"));
const server = await startNatsServer({ storeDir, env: process.env });
const nc = await connect({ servers: server.url, noAsyncTraces: true });
try {
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "PUBLISH_PATH", subjects: ["pp.>"], max_msgs: 200_000 });
  const variants = {
    "js.publish": natsPublisher(jetstream(nc)),
    muxPubAcks: natsPublisher(muxPubAcks(jetstream(nc), { nc })),
  };
  const results: Record<string, { client: number[]; server: number[] }> = {};
  let base = 0;
  for (let r = 0; r < ROUNDS; r++) {
    for (const [set, headers] of Object.entries(HEADER_SETS)) {
      for (const [name, publish] of Object.entries(variants)) {
        const key = `${name}${set}`;
        const values = results[key] ?? { client: [], server: [] };
        const cpu = await cpuPerPublish({ publish, headers, base, serverPid: server.pid });
        values.client.push(cpu.client);
        values.server.push(cpu.server);
        results[key] = values;
        base += COUNT;
      }
    }
  }
  console.log(
    `CPU per publish, µs, the publishing process and nats-server (median of ${ROUNDS} rounds of ${COUNT}):`,
  );
  for (const [key, values] of Object.entries(results)) {
    const client = round(median(values.client), 1);
    console.log(`  ${key.padEnd(50)} ${client}, nats-server ${round(median(values.server), 1)}`);
  }
} finally {
  await nc.close();
  await server.stop();
  rmSync(storeDir, { recursive: true, force: true });
}
