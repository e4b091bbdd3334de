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
 * Two things can still change a settled view: an operator's callback redelivery request (the
 * callback goes back to pending) and a projector rebuild. Entries are therefore trusted for
 * `maxAgeMs` (default 30 s) after they were read from KV, then read again.
 *
 * Bounded: about `maxEntries` views (a GenerationalMap: the older half is dropped whole).
 */
export interface JobViewCache {
  /** The cached settled view of `<client_id>.<job_id>`, or undefined on a miss. */
  get(key: string): JobView | undefined;
  /** Offers a view just read from KV; kept only when settled and newer than what is held. */
  remember(key: string, revision: number, view: JobView): void;
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
  readonly view: JobView;
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
  const entries = new GenerationalMap<Entry>(options.maxEntries ?? 20_000);

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
    get size() {
      return entries.size;
    },
  };
}
