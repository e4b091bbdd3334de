import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { isJsError, TOPOLOGY } from "../../shared/bus/index.ts";
import type { EventLayout } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import {
  type BacklogCollector,
  createProcessBacklogCollector,
  ReadModelRunningError,
  RebuildInterruptedError,
  type RebuildLease,
  takeRebuildLease,
} from "../../shared/projection/index.ts";
import { createProjector } from "./projector.ts";

/** Where a rebuild is, for progress lines (and for tests that act at a given point). */
export type RebuildStep = "lease_taken" | "views_purged" | "caught_up";

export interface RebuildDeps {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  readonly logger: Logger;
  readonly timeoutMs?: number;
  /** How long the durable is watched for a live projector before anything is changed. */
  readonly probeMs?: number;
  /** Called at each step, and awaited. */
  readonly onStep?: (step: RebuildStep) => void | Promise<void>;
  /** Bounds the memory of the fold, a backlog of the whole stream; default: this process's. */
  readonly backlog?: BacklogCollector;
}

export { ReadModelRunningError, RebuildInterruptedError };

/**
 * Refuses when the projector's durable shows a live consumer: a running projector keeps pull
 * requests waiting on it (num_waiting) or holds unacknowledged messages. Sampled a few times,
 * because a consumer renews its pull requests and may have none at one instant.
 */
async function refuseIfProjectorRuns(
  deps: RebuildDeps,
  on: { readonly stream: string; readonly durable: string },
): Promise<void> {
  const { stream, durable } = on;
  const samples = 4;
  const gapMs = (deps.probeMs ?? 1_500) / samples;
  for (let i = 0; i < samples; i++) {
    let info: Awaited<ReturnType<JetStreamManager["consumers"]["info"]>>;
    try {
      info = await deps.jsm.consumers.info(stream, durable);
    } catch (err) {
      if (isJsError(err, "consumerNotFound")) return;
      throw err;
    }
    if (info.num_waiting > 0 || info.num_ack_pending > 0) {
      throw new ReadModelRunningError(
        "projector",
        `durable '${durable}': ${info.num_waiting} pull requests waiting, ${info.num_ack_pending} messages in flight`,
      );
    }
    if (i < samples - 1) await Bun.sleep(gapMs);
  }
}

/**
 * Recreates the job view from the event stream: takes the projector's lease (refused with
 * {@link ReadModelRunningError} while a projector replica holds it), checks that no projector
 * consumes the durable anyway (one of a version without the lease), deletes the durable, purges
 * every view, replays the stream through a projector of its own until nothing is pending, and
 * releases the lease, leaving the durable at the head for the replica that takes over. Standby
 * replicas stay standby throughout; losing the lease half way stops with
 * {@link RebuildInterruptedError}. A hub of several partitions is rebuilt one partition at a
 * time, each under its own lease (`projector.p<p>`).
 */
export async function rebuildProjection(
  deps: RebuildDeps,
): Promise<{ events: number; jobs: number }> {
  const total = { events: 0, jobs: 0 };
  const backlog = deps.backlog ?? createProcessBacklogCollector();
  // Partition after partition, each under its own projector lease.
  for (let partition = 0; partition < deps.layout.partitions; partition++) {
    const lease = await takeRebuildLease({ ...deps, group: "projector", partition });
    try {
      await deps.onStep?.("lease_taken");
      const done = await rebuildUnderLease(deps, { lease, partition, backlog });
      total.events += done.events;
      total.jobs += done.jobs;
    } finally {
      await lease.release();
    }
  }
  return total;
}

async function rebuildUnderLease(
  deps: RebuildDeps,
  held: {
    readonly lease: RebuildLease;
    readonly partition: number;
    readonly backlog: BacklogCollector;
  },
): Promise<{ events: number; jobs: number }> {
  const { lease, partition, backlog } = held;
  const durable = TOPOLOGY.consumers.projector;
  const stream = deps.layout.stream(partition);
  await refuseIfProjectorRuns(deps, { stream, durable });
  lease.check();
  try {
    await deps.jsm.consumers.delete(stream, durable);
  } catch (err) {
    if (!isJsError(err, "consumerNotFound")) throw err;
  }
  const kv = await new Kvm(deps.nc).open(deps.layout.viewBucket(partition));
  const keys: string[] = [];
  for await (const key of await kv.keys()) keys.push(key);
  for (const key of keys) {
    lease.check();
    await kv.purge(key);
  }
  await deps.onStep?.("views_purged");
  const projector = createProjector({
    nc: deps.nc,
    js: deps.js,
    jsm: deps.jsm,
    layout: deps.layout,
    partition,
    kv,
    logger: deps.logger,
    lease: lease.fence,
    backlog,
  });
  await projector.start();
  const deadline = Date.now() + (deps.timeoutMs ?? 600_000);
  try {
    for (;;) {
      lease.check();
      const info = await deps.jsm.consumers.info(stream, durable);
      if (info.num_pending === 0 && info.num_ack_pending === 0) {
        let jobs = 0;
        for await (const _ of await kv.keys()) jobs++;
        await deps.onStep?.("caught_up");
        lease.check();
        return { events: info.delivered.stream_seq, jobs };
      }
      if (Date.now() > deadline) throw new Error("rebuild did not catch up in time");
      await Bun.sleep(100);
    }
  } finally {
    await projector.stop();
  }
}
