import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import { deleteIndexConsumer, INDEX_CONSUMER } from "./durable.ts";
import { createIndexer } from "./indexer.ts";

export interface IndexRebuildDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly store: IndexStore;
  readonly logger: Logger;
  /** Called about once a second with the sequence reached and the stream's last sequence. */
  readonly progress?: (done: number, total: number) => void;
  readonly timeoutMs?: number;
}

/**
 * `switchyard index rebuild`: empties the index and folds the whole events stream into it again,
 * then leaves the durable at the head for the indexer. Stop the indexer service first: one writer
 * at a time.
 */
export async function rebuildIndex(
  deps: IndexRebuildDeps,
): Promise<{ events: number; jobs: number }> {
  await deleteIndexConsumer(deps.jsm);
  await deps.store.reset();
  const indexer = createIndexer({
    js: deps.js,
    jsm: deps.jsm,
    // The index keeps one position: a rebuild folds a single-partition hub's stream.
    layout: SINGLE_PARTITION_LAYOUT,
    store: deps.store,
    logger: deps.logger,
    lingerMs: 0,
    maxBatch: 2_000,
  });
  await indexer.start();
  const deadline = Date.now() + (deps.timeoutMs ?? 24 * 3_600_000);
  try {
    for (;;) {
      const [info, stream] = await Promise.all([
        deps.jsm.consumers.info(TOPOLOGY.eventsStream, INDEX_CONSUMER),
        deps.jsm.streams.info(TOPOLOGY.eventsStream),
      ]);
      deps.progress?.(indexer.appliedSeq(), stream.state.last_seq);
      if (info.num_pending === 0 && info.num_ack_pending === 0) break;
      if (Date.now() > deadline) throw new Error("index rebuild did not catch up in time");
      await Bun.sleep(1_000);
    }
  } finally {
    await indexer.stop();
  }
  await deps.store.optimize();
  return {
    events: indexer.appliedSeq(),
    jobs: await deps.store.count({}, Number.MAX_SAFE_INTEGER - 1),
  };
}
