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
import { partitionOf } from "../../shared/jobs/index.ts";
import { coalesceWrites } from "../../shared/nats/index.ts";

export const FLOOR_STREAM = "FLOOR";
export const FLOOR_BUCKET = "floor_jobs";
/** Durable that runs each job (the executor and the callback in one step, as the peers' workers). */
export const FLOOR_WORKER = "floor-worker";
/** Durable that writes each finished job's view to the KV bucket (the projector's part). */
export const FLOOR_VIEWS = "floor-views";
/** Durable of the split floor's callback step (job.done, as the hub's callback service). */
export const FLOOR_CALLBACKS = "floor-callbacks";
/**
 * Durable of the feed floor's views: every event of every job, acked all at once (AckPolicy.All),
 * as the hub's read models take their one shared feed (docs/architecture.md).
 */
export const FLOOR_FEED = "floor-feed";

/** The kinds of the floor's events: a run, its finished view, its delivered callback. */
export type FloorEventKind = "run" | "done" | "cb";

/**
 * Where a floor with P partitions keeps a job's events and view, as the hub's layout
 * (shared/jobs/layout.ts) does: P = 1 is the one stream and bucket of every other scenario, bit for
 * bit; P > 1 gives each partition its own stream (`FLOOR_P<p>`, subjects `floor.p<p>.>`) and view
 * bucket (`floor_jobs_p<p>`). A job's partition is the hub's partitionOf over its id's hash (the
 * peers' ids are the hash alone, the hub's carry `job_` first), so the floor spreads the same jobs
 * the way the hub does.
 */
export interface FloorLayout {
  readonly partitions: number;
  partitionOf(jobId: string): number;
  stream(partition: number): string;
  bucket(partition: number): string;
  /** The subjects of one partition's stream. */
  streamSubjects(partition: number): string;
  /** The subject of one event of a job (in the job's partition). */
  subject(kind: FloorEventKind, jobId: string): string;
  /** A durable's filter: one kind of event of one partition, or all of them. */
  filter(partition: number, kind: FloorEventKind | "all"): string;
  /** The job id of an event subject. */
  jobIdOf(subject: string): string;
}

export function floorLayout(partitions = 1): FloorLayout {
  if (!Number.isInteger(partitions) || partitions < 1) {
    throw new Error(`the floor takes a partition count ≥ 1, not ${partitions}`);
  }
  const single = partitions === 1;
  const root = (p: number) => (single ? "floor" : `floor.p${p}`);
  const partition = (jobId: string) => partitionOf(`job_${jobId}`, partitions);
  return {
    partitions,
    partitionOf: partition,
    stream: (p) => (single ? FLOOR_STREAM : `${FLOOR_STREAM}_P${p}`),
    bucket: (p) => (single ? FLOOR_BUCKET : `${FLOOR_BUCKET}_p${p}`),
    streamSubjects: (p) => `${root(p)}.>`,
    subject: (kind, jobId) => `${root(partition(jobId))}.${kind}.${jobId}`,
    filter: (p, kind) => (kind === "all" ? `${root(p)}.>` : `${root(p)}.${kind}.>`),
    jobIdOf: (subject) => subject.slice(subject.lastIndexOf(".") + 1),
  };
}

/** FLOOR_PARTITIONS of the floor's processes (default 1). */
export function floorPartitionsFromEnv(raw: string | undefined): number {
  const n = Number(raw ?? 1);
  if (!Number.isInteger(n) || n < 1) {
    throw new Error(`FLOOR_PARTITIONS takes a partition count ≥ 1, not '${raw}'`);
  }
  return n;
}

/**
 * FLOOR_PAD_BYTES: a `pad` field of that many bytes in every event (and so in the view, which the
 * executor builds from the run): the floors' events at the hub's size, to measure what the bytes
 * cost (docs/performance.md, "The feed floor"). Default 0: the floors' own small events.
 */
export function floorPad(raw: string | undefined): { readonly pad?: string } {
  const n = Number(raw ?? 0);
  if (!Number.isInteger(n) || n < 0) {
    throw new Error(`FLOOR_PAD_BYTES takes a byte count ≥ 0, not '${raw}'`);
  }
  return n === 0 ? {} : { pad: "x".repeat(n) };
}

/** The run as stored in its run.requested event (subject floor.run.<job_id>). */
export interface FloorRun {
  readonly job_id: string;
  readonly request_id: string;
  readonly route: string;
  readonly input: string;
  readonly created_at: string;
  readonly callback_url?: string;
  readonly pad?: string;
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
  /** The feed floor: the views take every event from one ack-all durable (implies split). */
  readonly feed?: boolean;
  /** Streams and buckets, one each per partition (default 1: the stream and bucket of today). */
  readonly partitions?: number;
}

/** The streams, the views' buckets and the durables; idempotent, run by the benchmark first. */
export async function createFloorTopology(
  natsUrl: string,
  options: FloorTopologyOptions,
): Promise<void> {
  const layout = floorLayout(options.partitions);
  const nc = await connect({ servers: natsUrl, name: "floor-setup" });
  const jsm = await jetstreamManager(nc);
  const kvm = new Kvm(nc);
  const durables: [string, FloorEventKind | "all", number, AckPolicy][] = [
    [FLOOR_WORKER, "run", options.runsInFlight, AckPolicy.Explicit],
    options.feed
      ? [FLOOR_FEED, "all", options.viewsInFlight * 3, AckPolicy.All]
      : [FLOOR_VIEWS, "done", options.viewsInFlight, AckPolicy.Explicit],
  ];
  if (options.split || options.feed) {
    durables.push([FLOOR_CALLBACKS, "done", options.runsInFlight, AckPolicy.Explicit]);
  }
  for (let p = 0; p < layout.partitions; p++) {
    const stream = layout.stream(p);
    await jsm.streams.add({
      name: stream,
      subjects: [layout.streamSubjects(p)],
      storage: StorageType.File,
    });
    await kvm.create(layout.bucket(p), { history: 1 });
    for (const [durable, kind, maxAckPending, ackPolicy] of durables) {
      await jsm.consumers.add(stream, {
        durable_name: durable,
        filter_subject: layout.filter(p, kind),
        ack_policy: ackPolicy,
        max_ack_pending: maxAckPending,
        ack_wait: 30_000_000_000,
      });
    }
  }
  await nc.close();
}
