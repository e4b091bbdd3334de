/**
 * The JetStream floor's worker, in one of five roles (FLOOR_ROLE):
 *
 * - `worker` (the floor): runs and views in one process, per job one delivery to run it and one
 *   to write its view. Runs: echo the input, store job.done (the finished view), send the signed
 *   callback (the peers' callback.ts), store callback.delivered, then ack.
 * - `executor`, `callback`, `views` (the split floor): the same work split along the hub's
 *   service boundaries, one process each. The executor stores job.done and acks; the callback
 *   step consumes job.done (the callback URL rides in a header, as the hub's events carry what
 *   the next step needs), delivers and stores callback.delivered; the views fold is unchanged.
 *   Per job that is one delivery more (three), and two more processes woken.
 * - `executor`, `callback`, `feed` (the feed floor): the split floor whose views take every
 *   event of a job from one ack-all durable and write the view once the job settles
 *   (floor-feed.ts): the hub's JetStream work per job, five deliveries and two acks.
 *
 * A failed step naks its message with a delay, so it is redelivered and retried; the events
 * carry Nats-Msg-Ids, so a retry stores none twice. Views: each job.done is put in the KV bucket
 * as the job's view, acked once the put is stored. The consumers' max_ack_pending bounds the work
 * in flight (PEER_CONCURRENCY runs, as the peers).
 *
 * With FLOOR_PARTITIONS = P > 1 every role consumes its durable on each of the P streams
 * (floor-common.ts, floorLayout), as the hub's services do.
 *
 * Env: NATS_URL, WEBHOOK_SECRET, FLOOR_ROLE (default worker), FLOOR_PARTITIONS (default 1),
 * FLOOR_PAD_BYTES (default 0: see floor-common.ts).
 * Prints "READY".
 */
import type { JsMsg } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { headerOf, headersOf } from "../../shared/nats/headers.ts";
import type { PeerJobView } from "./app.ts";
import { createCallbackSender } from "./callback.ts";
import {
  connectFloor,
  FLOOR_CALLBACKS,
  FLOOR_FEED,
  FLOOR_VIEWS,
  FLOOR_WORKER,
  type FloorRun,
  floorLayout,
  floorPad,
  floorPartitionsFromEnv,
} from "./floor-common.ts";
import { CALLBACK_HEADER, createFeedViews, SWEEP_EVERY_MS } from "./floor-feed.ts";

const ROLES = ["worker", "executor", "callback", "views", "feed"] as const;
type Role = (typeof ROLES)[number];
const role = (process.env.FLOOR_ROLE ?? "worker") as Role;
if (!ROLES.includes(role)) {
  process.stderr.write(`FLOOR_ROLE must be one of ${ROLES.join(", ")}; got '${role}'\n`);
  process.exit(2);
}

const layout = floorLayout(floorPartitionsFromEnv(process.env.FLOOR_PARTITIONS));
const pad = floorPad(process.env.FLOOR_PAD_BYTES);
const { nc, js } = await connectFloor(`floor-${role}`);
const sendCallback = createCallbackSender(process.env.WEBHOOK_SECRET ?? "");
const RETRY_MS = 1_000;

function finishedView(run: FloorRun): PeerJobView {
  return {
    job_id: run.job_id,
    request_id: run.request_id,
    route: run.route,
    status: "done",
    created_at: run.created_at,
    completed_at: new Date().toISOString(),
    output: run.input,
    ...pad,
  };
}

/** Sends the callback and stores callback.delivered. */
async function deliver(url: string, view: PeerJobView, attempt: number): Promise<void> {
  const started = Date.now();
  await sendCallback(url, {
    job_id: view.job_id,
    request_id: view.request_id,
    route: view.route,
    output: view.output ?? "",
    created_at: view.created_at,
    completed_at: view.completed_at ?? "",
  });
  const delivered = { job_id: view.job_id, attempt, duration_ms: Date.now() - started, ...pad };
  await js.publish(layout.subject("cb", view.job_id), JSON.stringify(delivered), {
    msgID: `cb-${view.job_id}`,
  });
}

async function runJob(m: JsMsg): Promise<void> {
  const run = m.json<FloorRun>();
  const view = finishedView(run);
  // Split: the callback step needs the URL, which the view does not hold.
  const carried =
    role === "executor" && run.callback_url
      ? headersOf({ [CALLBACK_HEADER]: run.callback_url })
      : undefined;
  await js.publish(layout.subject("done", run.job_id), JSON.stringify(view), {
    msgID: `done-${run.job_id}`,
    ...(carried ? { headers: carried } : {}),
  });
  if (role === "worker" && run.callback_url) {
    await deliver(run.callback_url, view, m.info.deliveryCount);
  }
  m.ack();
}

async function callbackJob(m: JsMsg): Promise<void> {
  const url = headerOf(m, CALLBACK_HEADER);
  if (url) await deliver(url, m.json<PeerJobView>(), m.info.deliveryCount);
  m.ack();
}

/** Consumes `durable` on every partition's stream. */
async function consume(
  durable: string,
  step: (m: JsMsg, partition: number) => Promise<void>,
): Promise<void> {
  const loops = Array.from({ length: layout.partitions }, async (_, p) => {
    const consumer = await js.consumers.get(layout.stream(p), durable);
    for await (const m of await consumer.consume({ max_messages: 256 })) {
      step(m, p).catch(() => m.nak(RETRY_MS));
    }
  });
  await Promise.all(loops);
}

async function consumeViews(): Promise<void> {
  const kvm = new Kvm(nc);
  const buckets = await Promise.all(
    Array.from({ length: layout.partitions }, (_, p) => kvm.open(layout.bucket(p))),
  );
  await consume(FLOOR_VIEWS, (m, p) =>
    (buckets[p] as (typeof buckets)[number])
      .put(layout.jobIdOf(m.subject), m.data)
      .then(() => m.ack()),
  );
}

/** The feed floor's views: one fold per partition's feed (floor-feed.ts). */
async function consumeFeed(): Promise<void> {
  const kvm = new Kvm(nc);
  const buckets = await Promise.all(
    Array.from({ length: layout.partitions }, (_, p) => kvm.open(layout.bucket(p))),
  );
  const folds = buckets.map((bucket) =>
    createFeedViews({ put: (jobId, view) => bucket.put(jobId, view), jobIdOf: layout.jobIdOf }),
  );
  setInterval(() => {
    for (const fold of folds) fold.sweep();
  }, SWEEP_EVERY_MS);
  await consume(FLOOR_FEED, async (m, p) => (folds[p] as (typeof folds)[number]).take(m));
}

if (role === "worker" || role === "executor") void consume(FLOOR_WORKER, runJob);
if (role === "worker" || role === "views") void consumeViews();
if (role === "feed") void consumeFeed();
if (role === "callback") void consume(FLOOR_CALLBACKS, callbackJob);
process.stdout.write("READY\n");
const stop = async () => {
  await nc.drain();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
