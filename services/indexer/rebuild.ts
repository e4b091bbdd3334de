import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { EventLayout } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import {
  type ReadModelRunningError,
  type RebuildLease,
  takeRebuildLease,
} from "../../shared/projection/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import { deleteIndexConsumer, INDEX_CONSUMER } from "./durable.ts";
import { createIndexer } from "./indexer.ts";

export interface IndexRebuildDeps {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  readonly store: IndexStore;
  readonly logger: Logger;
  /** Called about once a second with the sequence reached and the stream's last sequence. */
  readonly progress?: (done: number, total: number) => void;
  readonly timeoutMs?: number;
}

/**
 * `switchyard index rebuild`: empties the index and folds every partition's whole events stream
 * into it again, then leaves each partition's durable at the head for the indexer. It holds the
 * indexer's lease of every partition from start to end (shared/projection/rebuild-lease.ts): a
 * running indexer refuses it with {@link ReadModelRunningError} before anything is changed, a
 * standby replica stays standby until the rebuild ends, and losing a lease half way stops it with
 * RebuildInterruptedError. The index is one store for every partition, so every lease is taken
 * before it is emptied.
 */
export async function rebuildIndex(
  deps: IndexRebuildDeps,
): Promise<{ events: number; jobs: number }> {
  const { layout } = deps;
  const leases: RebuildLease[] = [];
  try {
    for (let partition = 0; partition < layout.partitions; partition++) {
      leases.push(await takeRebuildLease({ ...deps, group: "indexer", partition }));
    }
    for (const stream of layout.streams()) await deleteIndexConsumer(deps.jsm, stream);
    await deps.store.reset();
    let events = 0;
    // Partition after partition: one writer per partition, each from the start of its stream.
    for (const [partition, lease] of leases.entries()) {
      events += await rebuildPartition(deps, { partition, lease });
    }
    await deps.store.optimize();
    for (const lease of leases) lease.check();
    return { events, jobs: await deps.store.count({}, Number.MAX_SAFE_INTEGER - 1) };
  } finally {
    for (const lease of leases) await lease.release();
  }
}

/** Folds one partition's whole stream into the index; the sequence it reached. */
async function rebuildPartition(
  deps: IndexRebuildDeps,
  held: { readonly partition: number; readonly lease: RebuildLease },
): Promise<number> {
  const { partition, lease } = held;
  const stream = deps.layout.stream(partition);
  const indexer = createIndexer({
    nc: deps.nc,
    js: deps.js,
    jsm: deps.jsm,
    layout: deps.layout,
    partition,
    store: deps.store,
    logger: deps.logger,
    lingerMs: 0,
    maxBatch: 2_000,
    lease: lease.fence,
  });
  await indexer.start();
  const deadline = Date.now() + (deps.timeoutMs ?? 24 * 3_600_000);
  try {
    for (;;) {
      lease.check();
      const [info, state] = await Promise.all([
        deps.jsm.consumers.info(stream, INDEX_CONSUMER),
        deps.jsm.streams.info(stream),
      ]);
      deps.progress?.(indexer.appliedSeq(), state.state.last_seq);
      if (info.num_pending === 0 && info.num_ack_pending === 0) break;
      if (Date.now() > deadline) throw new Error("index rebuild did not catch up in time");
      await Bun.sleep(1_000);
    }
  } finally {
    await indexer.stop();
  }
  return indexer.appliedSeq();
}
