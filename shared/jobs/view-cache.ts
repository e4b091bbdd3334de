import { isFinal, type JobView } from "../domain/index.ts";
import { GenerationalMap } from "./generations.ts";

/**
 * An in-process cache of **settled** job views: final status, and no callback still pending. A
 * settled view no longer changes through the job's own work, so GET /jobs and the replay path of
 * POST /run can answer it without a NATS round trip, and every other view is read from KV each
 * time (read-your-writes without a feed).
 *
 * It replaced a cache fed by a watch on the whole `sy_jobs` bucket: that cost the ingress 20% of
 * its CPU under POST load (every projector write delivered to, and parsed by, every ingress
 * replica), so it grew with replicas × writes, not with reads.
 *
 * Events can still change a settled view (an operator's retry adds `retried_as`, a callback
 * redelivery request makes the callback pending again). The projector announces each write over a
 * settled view (view-notices.ts) and every replica's cache drops that entry (`invalidate`), so a
 * reader sees the change as soon as the view is written. The notice is core NATS, so one can be
 * missed while a replica is disconnected: a reconnect empties the cache (`clear`), and entries
 * are trusted for at most `maxAgeMs` (default 30 s) after they were read from KV in any case.
 *
 * Bounded: about `maxEntries` views (a GenerationalMap: the older half is dropped whole).
 */
export interface JobViewCache {
  /** The cached settled view of `<client_id>.<job_id>`, or undefined on a miss. */
  get(key: string): JobView | undefined;
  /** Offers a view just read from KV; kept only when settled and newer than what is held. */
  remember(key: string, revision: number, view: JobView): void;
  /**
   * The view of `key` was rewritten at KV `revision`: drop it, and refuse any older revision a
   * read still in flight offers afterwards.
   */
  invalidate(key: string, revision: number): void;
  /** Drops every entry (a notice may have been missed). */
  clear(): void;
  readonly size: number;
}

export interface JobViewCacheOptions {
  readonly maxEntries?: number;
  readonly maxAgeMs?: number;
  /** Epoch milliseconds. */
  readonly now: () => number;
}

interface Entry {
  readonly revision: number;
  /** Undefined: invalidated at `revision`, nothing cached. */
  readonly view: JobView | undefined;
  readonly at: number;
}

/** True when nothing the job does can change the view any more. */
export function isSettledView(view: JobView): boolean {
  return isFinal(view.status) && view.callback?.status !== "pending";
}

/** Creates the cache; it holds no connection and needs no stop. */
export function createJobViewCache(options: JobViewCacheOptions): JobViewCache {
  const maxAgeMs = options.maxAgeMs ?? 30_000;
  const { now } = options;
  const maxEntries = options.maxEntries ?? 20_000;
  let entries = new GenerationalMap<Entry>(maxEntries);

  return {
    get(key) {
      const entry = entries.get(key);
      // Too old to trust: the reader's KV read confirms (or replaces) it.
      if (entry === undefined || now() - entry.at > maxAgeMs) return undefined;
      return entry.view;
    },
    remember(key, revision, view) {
      if (!isSettledView(view)) return;
      const current = entries.get(key);
      if (current !== undefined && current.revision > revision) return;
      entries.set(key, { revision, view, at: now() });
    },
    invalidate(key, revision) {
      const current = entries.get(key);
      if (current !== undefined && current.revision > revision) return;
      entries.set(key, { revision, view: undefined, at: now() });
    },
    clear() {
      entries = new GenerationalMap<Entry>(maxEntries);
    },
    get size() {
      return entries.size;
    },
  };
}
