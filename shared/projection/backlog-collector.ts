/**
 * Bounds a read-models process's memory while one of its lanes folds a backlog: a restart after
 * downtime, the search index joining after it was off, a rebuild. At a catch-up's pace the objects
 * each delivery makes outlive the young collections, and the process's RSS grows by those dead
 * objects and the native memory they hold, which only a full collection frees; JavaScriptCore
 * runs one when its heap has about doubled, every two seconds or so there
 * (`bun bench/read-models.ts` with READ_MODELS_BACKLOG=40000: 94 MB before, 175 at most, with
 * 26–36 MB of the JavaScript heap live). A full collection at most every `everyMs` while a lane
 * has at least `minPending` events undelivered holds that peak to 140–152 MB, for a catch-up up
 * to 15 % longer (docs/performance.md, "Catching up a backlog").
 *
 * A lane that keeps up never has that many undelivered (in the e2e bench's POST phases and closed
 * loop none did), so a hub at work pays nothing; a lane that falls that far behind pays one
 * collection per `everyMs` for as long as it stays behind. A collection longer than `maxShare` of
 * `everyMs` (a large heap, a profiler attached) spaces the next one out, so collections take at
 * most `maxShare` of the process's time: spaced only by `everyMs` they would run back to back, and
 * the catch-up they serve would all but stop.
 */
export interface BacklogCollector {
  /** A lane finished a round with `pending` events not yet delivered to its durable. */
  roundDone(pending: number): void;
}

/** The undelivered events from which a lane is catching up: four of the indexer's rounds. */
export const BACKLOG_MIN_PENDING = 2_000;
/** The least time between two collections: one collection of a 25-MB heap takes 16–40 ms. */
export const BACKLOG_COLLECT_EVERY_MS = 150;
/** The largest share of the process's time its collections take while it catches up. */
export const BACKLOG_MAX_SHARE = 0.25;

export interface BacklogCollectorDeps {
  /** A full, synchronous collection (`Bun.gc(true)`). */
  readonly collect: () => void;
  /** Milliseconds, monotonic enough to space collections. */
  readonly now: () => number;
  /** Called after each collection with the milliseconds it took (metrics). */
  readonly collected?: (tookMs: number) => void;
  readonly minPending?: number;
  readonly everyMs?: number;
  /** Above 0, at most 1. */
  readonly maxShare?: number;
}

/** One per process: the lanes of every read model and partition share it. */
export function createBacklogCollector(deps: BacklogCollectorDeps): BacklogCollector {
  const minPending = deps.minPending ?? BACKLOG_MIN_PENDING;
  const everyMs = deps.everyMs ?? BACKLOG_COLLECT_EVERY_MS;
  // After a collection of `took` ms, this many times `took` passes before the next one.
  const restPerMs = 1 / (deps.maxShare ?? BACKLOG_MAX_SHARE) - 1;
  let nextAt = Number.NEGATIVE_INFINITY;
  return {
    roundDone(pending) {
      if (pending < minPending) return;
      const startedAt = deps.now();
      if (startedAt < nextAt) return;
      deps.collect();
      const endedAt = deps.now();
      const took = endedAt - startedAt;
      nextAt = Math.max(startedAt + everyMs, endedAt + took * restPerMs);
      deps.collected?.(took);
    },
  };
}

/**
 * The collector of a Bun process: full synchronous collections (`Bun.gc(true)`) on the monotonic
 * clock. A hub's read-models process has one, and so has a rebuild's.
 */
export function createProcessBacklogCollector(
  collected?: (tookMs: number) => void,
): BacklogCollector {
  return createBacklogCollector({
    collect: () => Bun.gc(true),
    now: () => performance.now(),
    ...(collected ? { collected } : {}),
  });
}
