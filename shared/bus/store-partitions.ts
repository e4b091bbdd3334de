import type { KV } from "@nats-io/kv";

const PARTITIONS_KEY = "partitions";

/**
 * The partition count recorded in `sy_meta`, or undefined when the store has none: a store
 * written before partitions, which is P = 1.
 */
export async function readStorePartitions(meta: KV): Promise<number | undefined> {
  const entry = await meta.get(PARTITIONS_KEY);
  if (entry?.operation !== "PUT" || entry.length === 0) return undefined;
  const partitions = Number(entry.string());
  return Number.isInteger(partitions) && partitions >= 1 ? partitions : undefined;
}

/**
 * Records a new store's partition count. Services starting at once race here: the first write
 * wins and the others read it back (and refuse if theirs differs).
 */
export async function recordStorePartitions(meta: KV, partitions: number): Promise<number> {
  try {
    await meta.create(PARTITIONS_KEY, String(partitions));
    return partitions;
  } catch (err) {
    // The key exists (written by another service), or the write failed: what is stored decides.
    const stored = await readStorePartitions(meta);
    if (stored === undefined) throw err;
    return stored;
  }
}

/** A start whose nats.partitions differs from the count the store was created with. */
export class PartitionsMismatchError extends Error {
  readonly code = "partitions_mismatch";
  constructor(
    readonly configured: number,
    readonly stored: number,
  ) {
    super(
      `nats.partitions is ${configured}, but this store was created with ${stored} partitions; the count is fixed when a store is created. ` +
        `Set nats.partitions to ${stored} (docs/deploy.md, "Choosing partitions").`,
    );
    this.name = "PartitionsMismatchError";
  }
}

/** The store's partition count; refuses a configured count that differs from it. */
export function checkPartitions(configured: number, stored: number): number {
  if (configured !== stored) throw new PartitionsMismatchError(configured, stored);
  return stored;
}
