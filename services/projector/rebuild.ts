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
}

/**
 * Recreates the job view from the event stream: deletes the projector's durable, purges every view,
 * replays the stream through the projector until nothing is pending, and leaves the durable at the
 * head for the projector service. Stop projector services while it runs.
 */
export async function rebuildProjection(
  deps: RebuildDeps,
): Promise<{ events: number; jobs: number }> {
  const durable = TOPOLOGY.consumers.projector;
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
