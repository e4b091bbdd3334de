import type { JetStreamClient } from "@nats-io/jetstream";
import { type ReadStreamOptions, readStream, type StreamRecord } from "../bus/index.ts";
import type { EventLayout } from "./layout.ts";

/** A record of one partition's stream. */
export interface PartitionRecord extends StreamRecord {
  readonly partition: number;
}

/**
 * Every partition's stream read to its head and merged by the server's receive time (ties: the
 * lower partition first). Each partition's own order is kept; records of different partitions
 * stored in the same millisecond come in partition order. P = 1 reads the one stream as is.
 */
export async function* readPartitions(
  js: JetStreamClient,
  layout: EventLayout,
  options: Omit<ReadStreamOptions, "stream" | "follow" | "filterSubject"> & {
    /** Only these partitions (default: all). */
    readonly partitions?: readonly number[];
    /** Partition p's subject filter (default: every subject). */
    readonly filterOf?: (p: number) => string | undefined;
  },
): AsyncGenerator<PartitionRecord> {
  const chosen = options.partitions ?? layout.streams().map((_, p) => p);
  const readers = chosen.map((p) => {
    const filterSubject = options.filterOf?.(p);
    const read = readStream(js, {
      ...options,
      stream: layout.stream(p),
      ...(filterSubject ? { filterSubject } : {}),
    });
    return { p, it: read[Symbol.asyncIterator]() };
  });
  const heads = await Promise.all(readers.map((r) => r.it.next()));
  try {
    for (;;) {
      let best = -1;
      for (let i = 0; i < heads.length; i++) {
        const head = heads[i];
        if (head === undefined || head.done) continue;
        const current = best < 0 ? undefined : heads[best];
        if (current === undefined || current.done || head.value.time < current.value.time) best = i;
      }
      const reader = readers[best];
      const head = heads[best];
      if (reader === undefined || head === undefined || head.done) return;
      yield { ...head.value, partition: reader.p };
      heads[best] = await reader.it.next();
    }
  } finally {
    await Promise.all(readers.map((r) => r.it.return?.(undefined)));
  }
}
