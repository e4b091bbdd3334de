import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";
import { Load, startCallbackReceiver, verifyEchoOutcomes } from "./checks.ts";
import {
  FAULT_CLIENT,
  faultYaml,
  getJob,
  hubProcs,
  type ProcName,
  startAllServices,
} from "./procs.ts";

// Each service runs as its own process (`switchyard serve <svc>`) and is SIGKILLed mid-stream,
// then started again. The executor and callback services alone are covered by
// tests/executor/executor-crash.test.ts and tests/callbacks/restart.test.ts; here: the ingress,
// the projector, and all four in turn under one load.

const withCallback = (n: number) => n % 4 === 0;

async function setup() {
  const nats = await startNats();
  const receiver = startCallbackReceiver();
  const procs = await hubProcs(faultYaml({ natsUrl: nats.url }), nats.url);
  await startAllServices(procs);
  const load = new Load(procs.url, (request_id, n) => ({
    request_id,
    route: "f.echo",
    input: request_id,
    ...(withCallback(n) ? { callback_url: `${receiver.url}/cb` } : {}),
  }));
  return {
    nats,
    receiver,
    procs,
    load,
    /**
     * Stops the load, retries every unanswered request_id, and checks the outcome: every accepted
     * run final exactly once, views done, callbacks delivered once.
     */
    async stopLoadAndVerify() {
      await load.stop();
      expect(load.unexpected).toEqual([]);
      await load.settle();
      await verifyEchoOutcomes({
        jsm: await jetstreamManager(nats.nc),
        load,
        base: procs.url,
        receiver,
        withCallback,
      });
    },
    async [Symbol.asyncDispose]() {
      await load.stop();
      await procs.stop();
      await receiver.stop();
      await nats.stop();
    },
  };
}

test("ingress SIGKILLed mid-stream and restarted: unanswered requests retry into one job each", async () => {
  await using t = await setup();
  const { load, procs } = t;
  load.start(8);
  await waitFor("load before the kill", () => load.accepted.size >= 150, { timeoutMs: 20_000 });
  const oldUrl = procs.url();
  await procs.kill("ingress");
  // With the ingress gone requests fail to connect; nothing else answers for it.
  const atKill = load.accepted.size;
  await waitFor("refused connections", () => load.unsettled.size > 0, { timeoutMs: 10_000 });
  await procs.start("ingress");
  expect(procs.url()).not.toBe(oldUrl);
  await waitFor("acceptance after the restart", () => load.accepted.size >= atKill + 150, {
    timeoutMs: 20_000,
  });
  // Requests cut off by the kill may or may not have been stored: the same request_id again
  // answers 202 (it was not) or 200 (it was), and either way one job.
  await t.stopLoadAndVerify();
}, 90_000);

test("projector SIGKILLed mid-stream and restarted: GET falls back to the stream, views catch up", async () => {
  await using t = await setup();
  const { load, procs } = t;
  load.start(8);
  await waitFor("load before the kill", () => load.accepted.size >= 150, { timeoutMs: 20_000 });
  await procs.kill("projector");
  const atKill = load.accepted.size;
  await waitFor("runs accepted without a projector", () => load.accepted.size >= atKill + 150, {
    timeoutMs: 20_000,
  });
  // Read-your-writes without the projector: the newest job answers from the stream, not 404.
  const newest = load.jobIds().at(-1) ?? "";
  const read = await getJob(procs.url(), newest);
  expect(read.status).toBe(200);
  expect(["queued", "done"]).toContain(String(read.body.status));
  await procs.start("projector");
  const atRestart = load.accepted.size;
  await waitFor("load after the restart", () => load.accepted.size >= atRestart + 100, {
    timeoutMs: 20_000,
  });
  await t.stopLoadAndVerify();
  // GET above may have answered from the stream fallback. The views themselves must be complete
  // once the projector has caught up: every accepted job's own KV view, final and done. (This
  // used to count the bucket's messages right after the load, racing the projector's backlog.)
  const jsm = await jetstreamManager(t.nats.nc);
  await waitFor(
    "the projector to apply every event",
    async () => {
      const info = await jsm.consumers.info("SWITCHYARD_EVENTS", "projector");
      return info.num_pending === 0 && info.num_ack_pending === 0;
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  const kv = await new Kvm(t.nats.nc).open("sy_jobs");
  const missing: string[] = [];
  for (const jobId of load.jobIds()) {
    const entry = await kv.get(`${FAULT_CLIENT.id}.${jobId}`);
    const view = entry?.operation === "PUT" ? (entry.json() as { status?: string }) : undefined;
    if (view?.status !== "done") missing.push(`${jobId}: ${view?.status ?? "no view"}`);
  }
  expect(missing).toEqual([]);
}, 90_000);

test("all five services SIGKILLed in turn under one load: exactly once, callbacks delivered once", async () => {
  await using t = await setup();
  const { load, procs } = t;
  load.start(8);
  const order: ProcName[] = ["executor", "callback", "projector", "indexer", "ingress"];
  for (const name of order) {
    const before = load.accepted.size;
    await waitFor(`load before killing the ${name}`, () => load.accepted.size >= before + 80, {
      timeoutMs: 20_000,
    });
    await procs.kill(name);
    await procs.start(name);
  }
  const last = load.accepted.size;
  await waitFor("load after the last restart", () => load.accepted.size >= last + 80, {
    timeoutMs: 20_000,
  });
  await t.stopLoadAndVerify();
}, 120_000);
