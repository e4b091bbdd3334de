/**
 * Ends an iterator nats.js hands out as an AsyncIterable (`nc.status()`): its QueuedIterator has
 * `stop()`. A `for await` over it otherwise ends only at the next status, which may never come.
 */
export function stopStatusIterator(iterable: AsyncIterable<unknown>): void {
  const stop = (iterable as { stop?: unknown }).stop;
  if (typeof stop === "function") stop.call(iterable);
}
