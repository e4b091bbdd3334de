import type { KV } from "@nats-io/kv";
import type { JobState, JobView } from "../../shared/domain/index.ts";
import { GenerationalMap, isSettledView } from "../../shared/jobs/index.ts";

/** A job's view and the KV revision it was read or written at (0: no key). */
export interface StoredView {
  readonly view: JobState;
  readonly revision: number;
}

const CACHE_LIMIT = 20_000;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * The projector's access to the job views: KV `sy_jobs` with compare-and-set writes and an
 * in-process copy of the views of jobs still in flight (settled ones leave it: only an operator's
 * rare redelivery request changes them).
 */
export function createViewStore(deps: { readonly kv: KV }) {
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
      return { view: JSON.parse(decoder.decode(entry.value)) as JobView, revision: entry.revision };
    },

    /** True when this process holds the view (no KV read is needed to fold onto it). */
    cached: (key: string) => cache.get(key) !== undefined,

    /**
     * Compare-and-set write: create when the key is new (revision 0), else update at the revision
     * it was read at. Throws when another writer moved the key (the caller reloads and refolds).
     */
    async write(key: string, revision: number, view: JobView): Promise<void> {
      const bytes = encoder.encode(JSON.stringify(view));
      try {
        const next =
          revision === 0
            ? await deps.kv.create(key, bytes)
            : await deps.kv.update(key, bytes, revision);
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
