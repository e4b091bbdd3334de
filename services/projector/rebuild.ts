import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { isJsError, TOPOLOGY } from "../../shared/bus/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { createProjector } from "./projector.ts";

export interface RebuildDeps {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly logger: Logger;
  readonly timeoutMs?: number;
  /** How long the durable is watched for a live projector before anything is changed. */
  readonly probeMs?: number;
}

/** A projector service is consuming the durable: a rebuild now would break it. */
export class ProjectorRunningError extends Error {
  readonly code = "projector_running";
  constructor(readonly detail: string) {
    super(
      `a projector is running (${detail}). Rebuilding under it would delete its durable and purge views it is writing. Stop the projector service (or the hub) first, then run the rebuild.`,
    );
    this.name = "ProjectorRunningError";
  }
}

/**
 * Refuses when the projector's durable shows a live consumer: a running projector keeps pull
 * requests waiting on it (num_waiting) or holds unacknowledged messages. Sampled a few times,
 * because a consumer renews its pull requests and may have none at one instant.
 */
async function refuseIfProjectorRuns(deps: RebuildDeps, durable: string): Promise<void> {
  const samples = 4;
  const gapMs = (deps.probeMs ?? 1_500) / samples;
  for (let i = 0; i < samples; i++) {
    let info: Awaited<ReturnType<JetStreamManager["consumers"]["info"]>>;
    try {
      info = await deps.jsm.consumers.info(TOPOLOGY.eventsStream, durable);
    } catch (err) {
      if (isJsError(err, "consumerNotFound")) return;
      throw err;
    }
    if (info.num_waiting > 0 || info.num_ack_pending > 0) {
      throw new ProjectorRunningError(
        `durable '${durable}': ${info.num_waiting} pull requests waiting, ${info.num_ack_pending} messages in flight`,
      );
    }
    if (i < samples - 1) await Bun.sleep(gapMs);
  }
}

/**
 * Recreates the job view from the event stream: deletes the projector's durable, purges every view,
 * replays the stream through the projector until nothing is pending, and leaves the durable at the
 * head for the projector service. Refuses with {@link ProjectorRunningError} while a projector
 * service consumes the durable.
 */
export async function rebuildProjection(
  deps: RebuildDeps,
): Promise<{ events: number; jobs: number }> {
  const durable = TOPOLOGY.consumers.projector;
  await refuseIfProjectorRuns(deps, durable);
  try {
    await deps.jsm.consumers.delete(TOPOLOGY.eventsStream, durable);
  } catch (err) {
    if (!isJsError(err, "consumerNotFound")) throw err;
  }
  const kv = await new Kvm(deps.nc).open(TOPOLOGY.jobsBucket);
  const keys: string[] = [];
  for await (const key of await kv.keys()) keys.push(key);
  for (const key of keys) await kv.purge(key);
  const projector = createProjector({ js: deps.js, jsm: deps.jsm, kv, logger: deps.logger });
  await projector.start();
  const deadline = Date.now() + (deps.timeoutMs ?? 600_000);
  try {
    for (;;) {
      const info = await deps.jsm.consumers.info(TOPOLOGY.eventsStream, durable);
      if (info.num_pending === 0 && info.num_ack_pending === 0) {
        let jobs = 0;
        for await (const _ of await kv.keys()) jobs++;
        return { events: info.delivered.stream_seq, jobs };
      }
      if (Date.now() > deadline) throw new Error("rebuild did not catch up in time");
      await Bun.sleep(100);
    }
  } finally {
    await projector.stop();
  }
}
