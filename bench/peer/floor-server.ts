/**
 * The JetStream floor's HTTP server: the peers' Fastify app (app.ts: bearer auth, strict body,
 * job id from client + request_id) with JetStream as its store. A run is one run.requested event
 * on its own subject, published with the job id as Nats-Msg-Id and an expected last subject
 * sequence of 0, so a replay is refused by the store (the hub's idempotency, without its
 * read-back). GET reads the view the worker's views fold wrote; before that it answers 404.
 *
 * With FLOOR_PARTITIONS = P > 1 a run goes to its job's partition (floor-common.ts, floorLayout)
 * and GET reads that partition's bucket.
 *
 * Env: PORT, PEER_TOKEN, NATS_URL, FLOOR_PARTITIONS (default 1), FLOOR_PAD_BYTES (default 0).
 * Prints "LISTENING <port>".
 */
import { JetStreamApiError } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { JsErrorCode } from "../../shared/bus/js-errors.ts";
import { createPeerApp, type PeerJobView, type PeerStore, servePeer } from "./app.ts";
import {
  connectFloor,
  type FloorRun,
  floorLayout,
  floorPad,
  floorPartitionsFromEnv,
} from "./floor-common.ts";

const layout = floorLayout(floorPartitionsFromEnv(process.env.FLOOR_PARTITIONS));
const pad = floorPad(process.env.FLOOR_PAD_BYTES);
const { nc, js } = await connectFloor("floor-server");
const kvm = new Kvm(nc);
const buckets = await Promise.all(
  Array.from({ length: layout.partitions }, (_, p) => kvm.open(layout.bucket(p))),
);

const store: PeerStore = {
  async add(jobId, run) {
    const event: FloorRun = {
      job_id: jobId,
      request_id: run.request_id,
      route: run.route,
      input: run.input,
      created_at: new Date().toISOString(),
      ...(run.callback_url ? { callback_url: run.callback_url } : {}),
      ...pad,
    };
    try {
      await js.publish(layout.subject("run", jobId), JSON.stringify(event), {
        msgID: jobId,
        expect: { lastSubjectSequence: 0 },
      });
    } catch (err) {
      // The run exists: a replay of the same request_id names the same job.
      if (!(err instanceof JetStreamApiError && err.code === JsErrorCode.wrongLastSequence))
        throw err;
    }
  },
  async get(jobId) {
    const entry = await buckets[layout.partitionOf(jobId)]?.get(jobId);
    return entry?.operation === "PUT" ? entry.json<PeerJobView>() : undefined;
  },
};

await servePeer(createPeerApp(process.env.PEER_TOKEN ?? "", store), () => nc.drain());
