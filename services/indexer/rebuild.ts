import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { EventLayout } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import {
  type BacklogCollector,
  createProcessBacklogCollector,
  ReadModelRunningError,
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
  /**
   * Called about once a second with the events folded and those to fold: one partition's
   * sequence reached and its stream's last sequence (this command folds), or the sums over every
   * partition (the running indexer folds).
   */
  readonly progress?: (done: number, total: number) => void;
  /** Called once when an indexer runs: it rebuilds the index itself (what holds its lease). */
  readonly runningIndexer?: (detail: string) => void;
  readonly timeoutMs?: number;
  /** Bounds the memory of the fold, a backlog of the whole stream; default: this process's. */
  readonly backlog?: BacklogCollector;
}

export interface IndexRebuilt {
  /** Who folded the stream: this command (no indexer ran) or the running indexer. */
  readonly by: "rebuild" | "indexer";
  /** Events folded: stream sequences reached, summed over the partitions. */
  readonly events: number;
  /** Jobs in the rebuilt index. */
  readonly jobs: number;
}

const DAY_MS = 24 * 3_600_000;

/**
 * `switchyard index rebuild`: empties the index and folds every partition's whole events stream
 * into it again.
 *
 * - No indexer running: this command folds. It holds the indexer's lease of every partition from
 *   start to end (shared/projection/rebuild-lease.ts): a standby replica stays standby until the
 *   rebuild ends, and losing a lease half way stops it with RebuildInterruptedError. It leaves each
 *   partition's durable at the head for the indexer. The index is one store for every partition,
 *   so every lease is taken before it is emptied.
 * - An indexer running (a lease refused with {@link ReadModelRunningError}, before anything is
 *   changed): the running indexer folds, and its process's job views go on.
 *   {@link rebuildByRunningIndexer}.
 */
export async function rebuildIndex(deps: IndexRebuildDeps): Promise<IndexRebuilt> {
  const { layout } = deps;
  const leases: RebuildLease[] = [];
  try {
    for (let partition = 0; partition < layout.partitions; partition++) {
      try {
        leases.push(await takeRebuildLease({ ...deps, group: "indexer", partition }));
      } catch (err) {
        // Another rebuild holds the lease: refused, as before (it folds into the same index).
        if (!(err instanceof ReadModelRunningError) || err.rebuilding) throw err;
        for (const lease of leases.splice(0)) await lease.release();
        deps.runningIndexer?.(err.detail);
        return await rebuildByRunningIndexer(deps);
      }
    }
    for (const stream of layout.streams()) await deleteIndexConsumer(deps.jsm, stream);
    await deps.store.reset();
    let events = 0;
    const backlog = deps.backlog ?? createProcessBacklogCollector();
    // Partition after partition: one writer per partition, each from the start of its stream.
    for (const [partition, lease] of leases.entries()) {
      events += await rebuildPartition(deps, { partition, lease, backlog });
    }
    await deps.store.optimize();
    for (const lease of leases) lease.check();
    return { by: "rebuild", events, jobs: await countJobs(deps.store) };
  } finally {
    for (const lease of leases) await lease.release();
  }
}

const countJobs = (store: IndexStore) => store.count({}, Number.MAX_SAFE_INTEGER - 1);

/**
 * The index is emptied under a running indexer, which rebuilds it: the reset fences every writer
 * in the same transaction (IndexStore.reset), so each partition's indexer is refused at its next
 * write, leads again two seconds later from the empty position and folds its stream from the
 * start on its own durable (it rejoins the job views' feed once caught up: projection runner).
 * Lists miss the jobs not folded yet meanwhile. This waits until every partition's position
 * reaches its stream's last sequence as it was at the reset; given up after `timeoutMs` (a
 * day), the indexer goes on by itself.
 */
async function rebuildByRunningIndexer(deps: IndexRebuildDeps): Promise<IndexRebuilt> {
  const partitions = [...Array(deps.layout.partitions).keys()];
  const targets = await Promise.all(
    partitions.map(
      async (p) => (await deps.jsm.streams.info(deps.layout.stream(p))).state.last_seq,
    ),
  );
  const total = targets.reduce((a, b) => a + b, 0);
  await deps.store.reset();
  const deadline = Date.now() + (deps.timeoutMs ?? DAY_MS);
  for (;;) {
    const positions = await Promise.all(partitions.map((p) => deps.store.position(p)));
    const done = positions.reduce(
      (sum, position, p) => sum + Math.min(position.appliedSeq, targets[p] ?? 0),
      0,
    );
    deps.progress?.(done, total);
    if (done >= total) break;
    if (Date.now() > deadline) {
      throw new Error(
        `the running indexer has not caught up yet (${done} of ${total} events); it goes on by itself: see the index lag in switchyard status`,
      );
    }
    await Bun.sleep(1_000);
  }
  await deps.store.optimize();
  return { by: "indexer", events: total, jobs: await countJobs(deps.store) };
}

/** Folds one partition's whole stream into the index; the sequence it reached. */
async function rebuildPartition(
  deps: IndexRebuildDeps,
  held: {
    readonly partition: number;
    readonly lease: RebuildLease;
    readonly backlog: BacklogCollector;
  },
): Promise<number> {
  const { partition, lease, backlog } = held;
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
    backlog,
  });
  await indexer.start();
  const deadline = Date.now() + (deps.timeoutMs ?? DAY_MS);
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
