/**
 * The JetStream floor's shared parts: the least JetStream work a job can cost with the audit trail
 * issue 14 asks for (three stored events and one KV write, two deliveries), done by code that does
 * nothing else. It is measured beside the hub and the peers to show which goals no hub on this
 * stack (Bun, nats.js, nats-server 2.9.10) can reach: whatever the floor cannot reach, the hub
 * cannot either, since the hub does the floor's work and more.
 *
 * Its own nats-server (started by bench/lib/peers.ts), so its CPU is the floor's alone. The
 * connections have the hub's client settings (no async stack traces, writes coalesced per
 * event-loop turn) and its header code (shared/nats/headers.ts), so the floor is not handicapped
 * against the hub.
 */
import { AckPolicy, jetstream, jetstreamManager, StorageType } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { connect } from "@nats-io/transport-node";
import { coalesceWrites } from "../../shared/nats/index.ts";

export const FLOOR_STREAM = "FLOOR";
export const FLOOR_BUCKET = "floor_jobs";
/** Durable that runs each job (the executor and the callback in one step, as the peers' workers). */
export const FLOOR_WORKER = "floor-worker";
/** Durable that writes each finished job's view to the KV bucket (the projector's part). */
export const FLOOR_VIEWS = "floor-views";
/** Durable of the split floor's callback step (job.done, as the hub's callback service). */
export const FLOOR_CALLBACKS = "floor-callbacks";

/** The run as stored in its run.requested event (subject floor.run.<job_id>). */
export interface FloorRun {
  readonly job_id: string;
  readonly request_id: string;
  readonly route: string;
  readonly input: string;
  readonly created_at: string;
  readonly callback_url?: string;
}

export async function connectFloor(name: string) {
  const nc = await connect({ servers: process.env.NATS_URL ?? "", name, noAsyncTraces: true });
  coalesceWrites(nc);
  return { nc, js: jetstream(nc) };
}

/** How many messages each durable may hold unacked, and which floor it serves. */
export interface FloorTopologyOptions {
  /** Runs in flight in the worker (the peers' PEER_CONCURRENCY). */
  readonly runsInFlight: number;
  /** job.done events the views fold holds: deeper, since its puts are pipelined. */
  readonly viewsInFlight: number;
  /** The split floor: a callback durable on job.done too (executor and callback apart). */
  readonly split?: boolean;
}

/** The stream, the views' bucket and the durables; idempotent, run by the benchmark first. */
export async function createFloorTopology(
  natsUrl: string,
  options: FloorTopologyOptions,
): Promise<void> {
  const nc = await connect({ servers: natsUrl, name: "floor-setup" });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({
    name: FLOOR_STREAM,
    subjects: ["floor.>"],
    storage: StorageType.File,
  });
  await new Kvm(nc).create(FLOOR_BUCKET, { history: 1 });
  const durables: [string, string, number][] = [
    [FLOOR_WORKER, "floor.run.>", options.runsInFlight],
    [FLOOR_VIEWS, "floor.done.>", options.viewsInFlight],
  ];
  if (options.split) durables.push([FLOOR_CALLBACKS, "floor.done.>", options.runsInFlight]);
  for (const [durable, filter, maxAckPending] of durables) {
    await jsm.consumers.add(FLOOR_STREAM, {
      durable_name: durable,
      filter_subject: filter,
      ack_policy: AckPolicy.Explicit,
      max_ack_pending: maxAckPending,
      ack_wait: 30_000_000_000,
    });
  }
  await nc.close();
}
