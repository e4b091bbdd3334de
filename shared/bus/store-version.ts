import type { JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import { isJsError } from "./js-errors.ts";
import { TOPOLOGY } from "./topology-names.ts";

/**
 * The layout of what the hub keeps in JetStream: streams, consumers, schedule queues. 1 is
 * Switchyard 0.1 (a watchdog consumer, callback retries parked in the callback consumer, a
 * redelivery consumer on `.cb`); 2 is the lean event path (deadline timers and callback wake-ups
 * in their own work queues). Events and views are read by both; the consumers are not.
 */
export const STORE_VERSION = 2;
const VERSION_KEY = "store_version";

/** The store's version: written in `sy_meta`, or 1 for a store that has events and no mark. */
export async function readStoreVersion(jsm: JetStreamManager, meta: KV): Promise<number | "fresh"> {
  const marked = async () => {
    const entry = await meta.get(VERSION_KEY);
    return entry?.operation === "PUT" && entry.length > 0 ? Number(entry.string()) : undefined;
  };
  const first = await marked();
  if (first !== undefined) return first;
  try {
    await jsm.streams.info(TOPOLOGY.eventsStream);
  } catch (err) {
    if (isJsError(err, "streamNotFound")) return "fresh";
    throw err;
  }
  // A new store's mark is written before its stream, so a service starting beside the one that
  // creates them may see the stream after having missed the mark: read the mark again.
  return (await marked()) ?? 1;
}

/** Marks the store as `version` (a new store, or the end of `switchyard migrate`). */
export async function markStoreVersion(meta: KV, version = STORE_VERSION): Promise<void> {
  await meta.put(VERSION_KEY, String(version));
}

/** A service met a store an older version wrote: it must be migrated first. */
export class StoreOutdatedError extends Error {
  readonly code = "store_outdated";
  constructor(readonly version: number) {
    super(
      `this JetStream store was written by Switchyard 0.1 (store version ${version}; this version needs ${STORE_VERSION}). ` +
        'Stop every Switchyard 0.1 service, then run `switchyard migrate` once (docs/operations.md, "Upgrading from 0.1"); ' +
        "it carries open deadlines, callback retries and redelivery requests over and removes the old consumers.",
    );
    this.name = "StoreOutdatedError";
  }
}
