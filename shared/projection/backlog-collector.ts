/**
 * Bounds a read-models process's memory while one of its lanes folds a backlog: a restart after
 * downtime, the search index joining after it was off, a rebuild. At a catch-up's pace the
 * process's RSS grows by memory outside the JavaScript heap, mostly the deliveries' bytes (nats.js
 * reads them in socket chunks), that JavaScriptCore frees only with the objects owning it at a
 * full collection, which its own heap's growth sets about every two seconds there
 * (`bun bench/read-models.ts` with READ_MODELS_BACKLOG=40000: 94 MB before, 175 at most, with a
 * 26–36-MB JavaScript heap). A full collection at most every `everyMs` while a lane has at least
 * `minPending` events undelivered holds that peak to 140 MB, for a catch-up 15 % longer
 * (docs/performance.md, "Catching up a backlog").
 *
 * A lane that keeps up never has that many undelivered (in the e2e bench's POST phases and closed
 * loop none did), so a hub at work pays nothing; a lane that falls that far behind pays one
 * collection per `everyMs` for as long as it stays behind.
 */
export interface BacklogCollector {
  /** A lane finished a round with `pending` events not yet delivered to its durable. */
  roundDone(pending: number): void;
}

/** The undelivered events from which a lane is catching up: four of the indexer's rounds. */
export const BACKLOG_MIN_PENDING = 2_000;
/** The least time between two collections: one collection of a 25-MB heap takes 30–40 ms. */
export const BACKLOG_COLLECT_EVERY_MS = 150;

export interface BacklogCollectorDeps {
  /** A full, synchronous collection (`Bun.gc(true)`). */
  readonly collect: () => void;
  /** Milliseconds, monotonic enough to space collections. */
  readonly now: () => number;
  /** Called after each collection (a metric). */
  readonly collected?: () => void;
  readonly minPending?: number;
  readonly everyMs?: number;
}

/** One per process: the lanes of every read model and partition share it. */
export function createBacklogCollector(deps: BacklogCollectorDeps): BacklogCollector {
  const minPending = deps.minPending ?? BACKLOG_MIN_PENDING;
  const everyMs = deps.everyMs ?? BACKLOG_COLLECT_EVERY_MS;
  let last = Number.NEGATIVE_INFINITY;
  return {
    roundDone(pending) {
      if (pending < minPending) return;
      const now = deps.now();
      if (now - last < everyMs) return;
      last = now;
      deps.collect();
      deps.collected?.();
    },
  };
}
