import type { NatsConnection } from "@nats-io/transport-node";

/**
 * Ends an iterator nats.js hands out as an AsyncIterable (`nc.status()`): its QueuedIterator has
 * `stop()`. A `for await` over it otherwise ends only at the next status, which may never come.
 */
export function stopStatusIterator(iterable: AsyncIterable<unknown>): void {
  const stop = (iterable as { stop?: unknown }).stop;
  if (typeof stop === "function") stop.call(iterable);
}

/** Calls `reconnected` at each reconnect of the connection until the returned stop is called. */
export function onReconnect(
  nc: Pick<NatsConnection, "status">,
  reconnected: () => void,
): () => void {
  const statuses = nc.status();
  let stopped = false;
  void (async () => {
    for await (const status of statuses) {
      if (stopped) return;
      if (status.type === "reconnect") reconnected();
    }
  })().catch(() => undefined);
  return () => {
    stopped = true;
    stopStatusIterator(statuses);
  };
}
