import type { Logger } from "../../shared/log/index.ts";
import {
  createHousekeeping,
  type Housekeeping,
  type HousekeepingTimers,
} from "../../shared/projection/index.ts";
import type { IndexBeat, IndexStore } from "../../shared/search/index.ts";

/** The index position's heartbeat while idle: the operator overview's "index updated" age. */
export const HEARTBEAT_MS = 5_000;
const PRUNE_MS = 3_600_000;

/** What the housekeeping reads of one partition's index model. */
export interface IndexPartitionState {
  readonly partition: number;
  /** The model leads (its lease held) and has opened its position. */
  holding(): boolean;
  /** Its epoch from the store's claim (IndexStore.claim). */
  owner(): number;
  /** When it last wrote its position (a round or a heartbeat), epoch ms. */
  lastWriteMs(): number;
  /** Its consumer's pending count at its last round. */
  pending(): number;
  /** A heartbeat wrote its position at `at`. */
  beaten(at: number): void;
  /** Its heartbeat was refused: the index was reset, or another indexer claimed it since. */
  fenced(): void;
}

/** The partitions whose position is older than the heartbeat and that this process leads. */
export function dueBeats(
  partitions: Iterable<IndexPartitionState>,
  now: number,
  everyMs = HEARTBEAT_MS,
): IndexBeat[] {
  const due: IndexBeat[] = [];
  for (const p of partitions) {
    if (p.holding() && now - p.lastWriteMs() >= everyMs) {
      due.push({ partition: p.partition, owner: p.owner(), pending: p.pending() });
    }
  }
  return due.sort((a, b) => a.partition - b.partition);
}

export interface IndexHousekeeping {
  /** Adds a partition's model; returns its removal. */
  track(state: IndexPartitionState): () => void;
  stop(): Promise<void>;
}

/**
 * The indexer process's housekeeping on one timer (shared/projection/housekeeping.ts): the
 * heartbeat of every partition it leads in one write, and the hourly prune of rows past the
 * stream's retention (rows of every partition share the tables: done where partition 0 is led).
 * An idle indexer wakes once per {@link HEARTBEAT_MS} whatever P.
 */
export function createIndexHousekeeping(deps: {
  readonly store: IndexStore;
  readonly logger: Logger;
  /** Rows of jobs created longer ago than this are pruned (the stream's retention). */
  readonly retentionMs?: number;
  readonly timers?: HousekeepingTimers;
}): IndexHousekeeping {
  const { store, logger } = deps;
  const partitions = new Map<number, IndexPartitionState>();
  let lastPrune = 0;
  const housekeeping: Housekeeping = createHousekeeping({
    everyMs: HEARTBEAT_MS,
    logger,
    ...(deps.timers ? { timers: deps.timers } : {}),
  });

  const beat = async (now: number) => {
    const due = dueBeats(partitions.values(), now);
    if (due.length === 0) return;
    const refused = new Set(await store.heartbeat(due, now));
    for (const b of due) {
      const state = partitions.get(b.partition);
      if (refused.has(b.partition)) state?.fenced();
      else state?.beaten(now);
    }
  };

  const prune = async (now: number) => {
    if (deps.retentionMs === undefined || !partitions.get(0)?.holding()) return;
    if (now - lastPrune < PRUNE_MS) return;
    lastPrune = now;
    const removed = await store.prune(now - deps.retentionMs);
    if (removed > 0) logger.info({ removed }, "index pruned to the stream's retention");
    await store.optimize();
  };

  const remove = housekeeping.add({
    name: "index heartbeat and prune",
    async run(now) {
      await beat(now);
      await prune(now);
    },
  });

  return {
    track(state) {
      partitions.set(state.partition, state);
      return () => {
        if (partitions.get(state.partition) === state) partitions.delete(state.partition);
      };
    },
    async stop() {
      remove();
      await housekeeping.stop();
    },
  };
}
