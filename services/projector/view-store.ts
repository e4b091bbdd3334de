import type { KV } from "@nats-io/kv";
import type { JobState, JobView } from "../../shared/domain/index.ts";
import { GenerationalMap, isSettledView, jobViewCodec } from "../../shared/jobs/index.ts";

/** A job's view and the KV revision it was read or written at (0: no key). */
export interface StoredView {
  readonly view: JobState;
  readonly revision: number;
}

const CACHE_LIMIT = 20_000;

export interface ViewStoreDeps {
  readonly kv: KV;
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
        const next =
          from.revision === 0
            ? await deps.kv.create(key, bytes)
            : await deps.kv.update(key, bytes, from.revision);
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
