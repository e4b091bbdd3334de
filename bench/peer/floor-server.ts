/**
 * The JetStream floor's HTTP server: the peers' Fastify app (app.ts: bearer auth, strict body,
 * job id from client + request_id) with JetStream as its store. A run is one run.requested event
 * on its own subject, published with the job id as Nats-Msg-Id and an expected last subject
 * sequence of 0, so a replay is refused by the store (the hub's idempotency, without its
 * read-back). GET reads the view the worker's views fold wrote; before that it answers 404.
 *
 * Env: PORT, PEER_TOKEN, NATS_URL. Prints "LISTENING <port>".
 */
import { JetStreamApiError } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { JsErrorCode } from "../../shared/bus/js-errors.ts";
import { createPeerApp, type PeerJobView, type PeerStore, servePeer } from "./app.ts";
import { connectFloor, FLOOR_BUCKET, type FloorRun } from "./floor-common.ts";

const { nc, js } = await connectFloor("floor-server");
const kv = await new Kvm(nc).open(FLOOR_BUCKET);

const store: PeerStore = {
  async add(jobId, run) {
    const event: FloorRun = {
      job_id: jobId,
      request_id: run.request_id,
      route: run.route,
      input: run.input,
      created_at: new Date().toISOString(),
      ...(run.callback_url ? { callback_url: run.callback_url } : {}),
    };
    try {
      await js.publish(`floor.run.${jobId}`, JSON.stringify(event), {
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
    const entry = await kv.get(jobId);
    return entry?.operation === "PUT" ? entry.json<PeerJobView>() : undefined;
  },
};

await servePeer(createPeerApp(process.env.PEER_TOKEN ?? "", store), () => nc.drain());
