/**
 * Bounds a read-models process's memory while one of its lanes catches up a backlog.
 *
 * Catching up, a lane folds whole batches back to back (25,000 events a second at P = 1 on a
 * 2-core VM), and the JavaScript heap grows with what a round allocates faster than the
 * collector's own pace frees it: the process's resident set rose from 94 to 169–174 MB during a
 * catch-up of 120,000 events, against about 130–146 MB at the closed loop's steady 3,000 events a
 * second, and the allocator keeps the pages it reached. A full collection at most every
 * {@link CATCH_UP_COLLECT_EVERY_MS} while a lane is behind held that catch-up to 141–145 MB, for
 * about 10 % of its speed (`READ_MODELS_BACKLOG=40000 bun bench/read-models.ts`;
 * docs/performance.md, "Peak RSS of the read models"). A lane is behind once its rounds have
 * taken whole batches for that long: a single full round, as the closed loop makes now and then,
 * collects nothing, and a process that keeps up never collects.
 */
export const CATCH_UP_COLLECT_EVERY_MS = 150;

/** One lane's side: it reports each round it ends. */
export interface CatchUpLane {
  /** A round ended; `full`: it took a whole batch (more was queued than one round folds). */
  roundEnded(full: boolean): void;
}

export interface CatchUpCollector {
  /** A lane of this process (its own streak of full rounds; collections shared by all). */
  lane(): CatchUpLane;
}

export interface CatchUpCollectorDeps {
  /** The least time between collections, and how long a lane must be behind before the first. */
  readonly everyMs: number;
  readonly now: () => number;
  /** A synchronous full collection (the process's `Bun.gc(true)`). */
  readonly collect: () => void;
}

export function createCatchUpCollector(deps: CatchUpCollectorDeps): CatchUpCollector {
  const { everyMs, now, collect } = deps;
  let lastCollectedAt = Number.NEGATIVE_INFINITY;
  return {
    lane() {
      /** When this lane's current streak of full rounds began (undefined: it keeps up). */
      let behindSince: number | undefined;
      return {
        roundEnded(full) {
          if (!full) {
            behindSince = undefined;
            return;
          }
          const at = now();
          behindSince ??= at;
          if (at - Math.max(behindSince, lastCollectedAt) < everyMs) return;
          collect();
          lastCollectedAt = now();
        },
      };
    },
  };
}
