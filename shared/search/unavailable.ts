import { SwitchyardError, UnavailableError } from "../errors/index.ts";
import type { IndexStore } from "./types.ts";

/** What the API reads from the index; a failure of any of them means the index cannot answer. */
const API_READS = ["load", "position", "page", "count", "counts", "clients", "perMinute"] as const;

/**
 * The index as the APIs read it: a backend that fails a read (PostgreSQL down, a connection
 * reset, a locked SQLite file past its busy timeout) answers 503 with Retry-After, not 500. The
 * caller can do nothing about it but try again; the jobs themselves are safe in the stream.
 * Errors the hub already names (a SwitchyardError) pass through unchanged.
 */
export function readsAnswerUnavailable(store: IndexStore, retryAfterSec = 5): IndexStore {
  const guarded: Partial<Record<(typeof API_READS)[number], unknown>> = {};
  for (const name of API_READS) {
    const read = store[name] as (...args: unknown[]) => Promise<unknown>;
    guarded[name] = (...args: unknown[]) =>
      read.apply(store, args).catch((err: unknown) => {
        if (err instanceof SwitchyardError) throw err;
        throw new UnavailableError({
          detail: `The search index (${store.backend}) cannot answer now; try again shortly.`,
          cause: err,
          headers: { "Retry-After": String(retryAfterSec) },
        });
      });
  }
  return { ...store, ...guarded } as IndexStore;
}
