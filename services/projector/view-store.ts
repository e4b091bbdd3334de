import { type JetStreamClient, PubHeaders } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { JobState, JobView } from "../../shared/domain/index.ts";
import { GenerationalMap, isSettledView, jobViewCodec } from "../../shared/jobs/index.ts";
import { headersOf } from "../../shared/nats/index.ts";

/** A job's view and the KV revision it was read or written at (0: no key). */
export interface StoredView {
  readonly view: JobState;
  readonly revision: number;
}

const CACHE_LIMIT = 20_000;

export interface ViewStoreDeps {
  /** Reads (a view not in the process's copy). */
  readonly kv: KV;
  /** Writes: the compare-and-set publish to the bucket's subject (see `write`). */
  readonly js: JetStreamClient;
  /** The name of `kv`'s bucket. */
  readonly bucket: string;
  /**
   * A settled view was rewritten (an operator's retry, a redelivery request): readers that cached
   * it must drop it (view-notices.ts). Not called for any other write.
   */
  readonly settledViewChanged?: (change: { key: string; revision: number }) => void;
}

/**
 * The projector's access to the job views: KV `sy_jobs` with compare-and-set writes and an
 * in-process copy of the views of jobs still in flight (settled ones leave it: only an operator's
 * rare retry or redelivery request changes them).
 */
export function createViewStore(deps: ViewStoreDeps) {
  const cache = new GenerationalMap<StoredView>(CACHE_LIMIT);
  return {
    /** The view as last written by this process, or read from KV. */
    async load(key: string): Promise<StoredView> {
      const hit = cache.get(key);
      if (hit) return hit;
      const entry = await deps.kv.get(key);
      if (entry?.operation !== "PUT" || entry.length === 0) {
        return { view: null, revision: entry?.revision ?? 0 };
      }
      return { view: jobViewCodec.decode(entry.value), revision: entry.revision };
    },

    /** True when this process holds the view (no KV read is needed to fold onto it). */
    cached: (key: string) => cache.get(key) !== undefined,

    /**
     * Compare-and-set write over `from` (the view as loaded): create when the key is new
     * (revision 0), else update at the revision it was read at. Throws when another writer moved
     * the key (the caller reloads and refolds).
     */
    async write(key: string, from: StoredView, view: JobView): Promise<void> {
      const bytes = jobViewCodec.encode(view);
      try {
        // What kv.create and kv.update publish (the key's subject, expecting its last revision),
        // without nats.js's KV key checks and general header code: its KV client took 8.6 % of
        // the read models' samples in the e2e profile, around a publish of 3.8 %. kv.create's one
        // extra, a retry over a delete marker, is the caller's reload and refold here (the
        // marker's revision is what load returns).
        const ack = await deps.js.publish(`$KV.${deps.bucket}.${key}`, bytes, {
          headers: headersOf({
            [PubHeaders.ExpectedLastSubjectSequenceHdr]: `${from.revision}`,
          }),
        });
        const next = ack.seq;
        if (from.view !== null && isSettledView(from.view)) {
          deps.settledViewChanged?.({ key, revision: next });
        }
        if (isSettledView(view)) cache.delete(key);
        else cache.set(key, { view, revision: next });
      } catch (err) {
        cache.delete(key);
        throw err;
      }
    },

    forget: (key: string) => cache.delete(key),
  };
}

export type ViewStore = ReturnType<typeof createViewStore>;
