import { type KV, KvWatchInclude } from "@nats-io/kv";
import type { JobView } from "../domain/index.ts";
import type { Logger } from "../log/index.ts";

/**
 * An in-process cache of job views, fed by a watch on the `sy_jobs` bucket, so GET /jobs and the
 * replay path of POST /run answer without a NATS round trip. The watch starts at "now" (updates
 * only); views written before it are filled in by the reader's direct KV reads. Entries keep the
 * KV revision, and an older revision never replaces a newer one, so a key only moves forward.
 *
 * Bounded: about `maxEntries` views (the least recently written are dropped first), each
 * trusted for at most `maxAgeMs` since it was last confirmed (the KV's TTL removes views without
 * a watch event). A miss is never an answer: the reader falls back to KV, then to the stream.
 */
export interface JobViewCache {
  /** The cached view of `<client_id>.<job_id>`, or undefined on a miss. */
  get(key: string): JobView | undefined;
  /** Records a view read directly from KV (ignored when the cache already holds a newer one). */
  remember(key: string, revision: number, bytes: Uint8Array): void;
  readonly size: number;
  stop(): Promise<void>;
}

export interface JobViewCacheOptions {
  readonly maxEntries?: number;
  readonly maxAgeMs?: number;
  readonly logger?: Logger;
  readonly now?: () => number;
}

interface Entry {
  revision: number;
  bytes: Uint8Array | undefined;
  view: JobView | undefined;
  at: number;
}

const decoder = new TextDecoder();

export async function startJobViewCache(
  kv: KV,
  options: JobViewCacheOptions = {},
): Promise<JobViewCache> {
  const maxEntries = options.maxEntries ?? 20_000;
  const maxAgeMs = options.maxAgeMs ?? 300_000;
  const now = options.now ?? Date.now;
  // Two generations instead of one LRU map: writes go to `young`; when it holds half the budget
  // it becomes `old` and the previous `old` is dropped. Nothing is ever deleted from a Map, so
  // there is no delete-then-iterate-from-the-front cost (JSC skips deleted slots one by one).
  const half = Math.max(1, Math.floor(maxEntries / 2));
  let young = new Map<string, Entry>();
  let old = new Map<string, Entry>();
  const lookup = (key: string) => young.get(key) ?? old.get(key);

  const put = (key: string, revision: number, bytes: Uint8Array | undefined) => {
    const current = lookup(key);
    if (current && current.revision >= revision) {
      if (current.revision === revision) current.at = now();
      return;
    }
    // Copy: a watch message's payload is a view into the connection's read buffer.
    young.set(key, { revision, bytes: bytes?.slice(), view: undefined, at: now() });
    if (young.size >= half) {
      old = young;
      young = new Map();
    }
  };

  const watch = await kv.watch({ include: KvWatchInclude.UpdatesOnly });
  const done = (async () => {
    for await (const e of watch) {
      // Views are never empty; a delete or purge has no payload (checked without decoding the
      // headers). It keeps its revision, so an older direct read cannot resurrect the key.
      const value = e.value;
      put(e.key, e.revision, value.length > 0 ? value : undefined);
    }
  })().catch((err: unknown) => {
    options.logger?.warn({ err: (err as Error).message }, "job view cache watch ended");
    young = new Map();
    old = new Map();
  });

  return {
    get(key) {
      const entry = lookup(key);
      // Stale entries are not answers; the reader's KV read confirms (or replaces) them.
      if (!entry?.bytes || now() - entry.at > maxAgeMs) return undefined;
      entry.view ??= JSON.parse(decoder.decode(entry.bytes)) as JobView;
      return entry.view;
    },
    remember(key, revision, bytes) {
      put(key, revision, bytes);
    },
    get size() {
      return young.size + old.size;
    },
    async stop() {
      watch.stop();
      await done;
      young = new Map();
      old = new Map();
    },
  };
}
