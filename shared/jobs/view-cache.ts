import { isFinal, type JobView } from "../domain/index.ts";

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
 * Bounded: about `maxEntries` views in two generations (the older half is dropped whole).
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
  const maxEntries = options.maxEntries ?? 20_000;
  const maxAgeMs = options.maxAgeMs ?? 30_000;
  const { now } = options;
  // Two generations instead of one LRU map: writes go to `young`; when it holds half the budget
  // it becomes `old` and the previous `old` is dropped. Nothing is ever deleted from a Map, so
  // there is no delete-then-iterate-from-the-front cost (JSC skips deleted slots one by one).
  const half = Math.max(1, Math.floor(maxEntries / 2));
  let young = new Map<string, Entry>();
  let old = new Map<string, Entry>();
  const lookup = (key: string) => young.get(key) ?? old.get(key);

  return {
    get(key) {
      const entry = lookup(key);
      // Too old to trust: the reader's KV read confirms (or replaces) it.
      if (entry === undefined || now() - entry.at > maxAgeMs) return undefined;
      return entry.view;
    },
    remember(key, revision, view) {
      if (!isSettledView(view)) return;
      const current = lookup(key);
      if (current !== undefined && current.revision > revision) return;
      young.set(key, { revision, view, at: now() });
      if (young.size >= half) {
        old = young;
        young = new Map();
      }
    },
    get size() {
      return young.size + old.size;
    },
  };
}
