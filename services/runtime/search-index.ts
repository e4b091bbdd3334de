import { hostname } from "node:os";
import { type Config, parseDuration } from "../../shared/config/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import { createLease, openLeaseBucket } from "../../shared/lease/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import {
  type IndexStore,
  openIndexStore,
  readsAnswerUnavailable,
} from "../../shared/search/index.ts";
import { createIndexer } from "../indexer/index.ts";
import type { ServiceName } from "./run.ts";

/** The search index keeps one position per store, so it folds a single-partition hub only. */
export class PartitionedIndexError extends Error {
  readonly code = "index_partitioned";
  constructor(readonly partitions: number) {
    super(
      `index.enabled needs nats.partitions = 1 (this store has ${partitions}): the search index keeps one position. Set index.enabled: false on a partitioned hub (docs/deploy.md, "Choosing partitions").`,
    );
    this.name = "PartitionedIndexError";
  }
}

interface Stoppable {
  readonly name: string;
  stop(): Promise<void>;
}

/**
 * The search index in one process: one store shared by the ingress (GET /jobs, the operator API)
 * and the indexer service (one writer at a time, on its own lease, like the projector).
 */
export async function startSearchIndex(deps: {
  readonly services: readonly ServiceName[];
  readonly hub: HubConnection;
  readonly config: Config;
  readonly logger: Logger;
}) {
  const { config } = deps;
  const wanted =
    config.index.enabled &&
    (deps.services.includes("ingress") || deps.services.includes("indexer"));
  const store: IndexStore | undefined = wanted ? await openIndexStore(config.index) : undefined;
  return {
    // The APIs read through a guard: a failing backend answers 503, the indexer sees the error.
    ingress: store ? { index: readsAnswerUnavailable(store) } : {},
    async startIndexer(stoppables: Stoppable[]) {
      if (!store) {
        // A warning where the indexer runs alone (a pod deployed for nothing), a note in `up`.
        const level = deps.services.length === 1 ? "warn" : "info";
        deps.logger[level](
          { component: "indexer" },
          "index.enabled is false: the indexer service has nothing to do",
        );
        return;
      }
      const logger = deps.logger.child({ component: "indexer" });
      if (deps.hub.layout.partitions > 1)
        throw new PartitionedIndexError(deps.hub.layout.partitions);
      const indexer = createIndexer({
        js: deps.hub.js,
        jsm: deps.hub.jsm,
        layout: deps.hub.layout,
        store,
        logger,
        lingerMs: parseDuration(config.index.linger),
        retentionMs: parseDuration(config.nats.events_max_age),
        // One writer at a time, like the projector: replicas stand by on their own lease.
        lease: createLease({
          kv: await openLeaseBucket(deps.hub.nc, { replicas: config.nats.replicas }),
          key: "indexer",
          holder: `${hostname()}/${process.pid}`,
          logger,
        }),
      });
      await indexer.start();
      stoppables.push({ name: "indexer", stop: indexer.stop });
    },
    async close() {
      await store?.close();
    },
  };
}
