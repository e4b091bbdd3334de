/**
 * The JetStream floor's worker: per job one delivery to run it and one to write its view.
 *
 * - Runs: echo the input, store job.done (the finished view), send the signed callback (the
 *   peers' callback.ts), store callback.delivered, then ack. A failed callback naks the run with a
 *   delay, so it is redelivered and retried; the events carry Nats-Msg-Ids, so a retry stores
 *   none twice.
 * - Views: each job.done is put in the KV bucket as the job's view, acked once the put is stored.
 *
 * The consumers' max_ack_pending bounds the work in flight (PEER_CONCURRENCY runs, as the peers).
 *
 * Env: NATS_URL, WEBHOOK_SECRET. Prints "READY".
 */
import type { JsMsg } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { PeerJobView } from "./app.ts";
import { createCallbackSender } from "./callback.ts";
import {
  connectFloor,
  FLOOR_BUCKET,
  FLOOR_STREAM,
  FLOOR_VIEWS,
  FLOOR_WORKER,
  type FloorRun,
} from "./floor-common.ts";

const { nc, js } = await connectFloor("floor-worker");
const kv = await new Kvm(nc).open(FLOOR_BUCKET);
const sendCallback = createCallbackSender(process.env.WEBHOOK_SECRET ?? "");
const RETRY_MS = 1_000;

async function runJob(m: JsMsg): Promise<void> {
  const run = m.json<FloorRun>();
  const view: PeerJobView = {
    job_id: run.job_id,
    request_id: run.request_id,
    route: run.route,
    status: "done",
    created_at: run.created_at,
    completed_at: new Date().toISOString(),
    output: run.input,
  };
  await js.publish(`floor.done.${run.job_id}`, JSON.stringify(view), {
    msgID: `done-${run.job_id}`,
  });
  if (run.callback_url) {
    const started = Date.now();
    await sendCallback(run.callback_url, {
      job_id: view.job_id,
      request_id: view.request_id,
      route: view.route,
      output: run.input,
      created_at: view.created_at,
      completed_at: view.completed_at ?? "",
    });
    const delivered = {
      job_id: run.job_id,
      attempt: m.info.deliveryCount,
      duration_ms: Date.now() - started,
    };
    await js.publish(`floor.cb.${run.job_id}`, JSON.stringify(delivered), {
      msgID: `cb-${run.job_id}`,
    });
  }
  m.ack();
}

async function consumeRuns(): Promise<void> {
  const consumer = await js.consumers.get(FLOOR_STREAM, FLOOR_WORKER);
  for await (const m of await consumer.consume({ max_messages: 256 })) {
    runJob(m).catch(() => m.nak(RETRY_MS));
  }
}

async function consumeViews(): Promise<void> {
  const consumer = await js.consumers.get(FLOOR_STREAM, FLOOR_VIEWS);
  for await (const m of await consumer.consume({ max_messages: 256 })) {
    const jobId = m.subject.slice("floor.done.".length);
    kv.put(jobId, m.data).then(
      () => m.ack(),
      () => m.nak(RETRY_MS),
    );
  }
}

void consumeRuns();
void consumeViews();
process.stdout.write("READY\n");
const stop = async () => {
  await nc.drain();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
