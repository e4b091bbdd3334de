import { type Config, parseDuration } from "../../shared/config/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import {
  type BacklogCollector,
  createRoundPacer,
  type SharedFeeds,
} from "../../shared/projection/index.ts";
import {
  type IndexStore,
  openIndexStore,
  readsAnswerUnavailable,
} from "../../shared/search/index.ts";
import { createIndexer, createIndexHousekeeping } from "../indexer/index.ts";
import type { ReadModelLeases } from "./read-model-leases.ts";
import type { ServiceName } from "./run.ts";

interface Stoppable {
  readonly name: string;
  stop(): Promise<void>;
}

/**
 * The search index in one process: one store shared by the ingress (GET /jobs, the operator API)
 * and the indexer service (one writer per partition at a time, on the partition's lease, like the
 * projector).
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
    async startIndexer(options: {
      readonly stoppables: Stoppable[];
      readonly leases: ReadModelLeases | undefined;
      /** The projector runs here too: the indexers fold its deliveries once caught up. */
      readonly feeds: SharedFeeds | undefined;
      /** The process's collector for read models folding a backlog. */
      readonly backlog: BacklogCollector;
    }) {
      const { stoppables, leases, feeds, backlog } = options;
      if (!store || !leases) {
        // A warning where the indexer runs alone (a pod deployed for nothing), a note in `up`.
        const level = deps.services.length === 1 ? "warn" : "info";
        deps.logger[level](
          { component: "indexer" },
          "index.enabled is false: the indexer service has nothing to do",
        );
        return;
      }
      const logger = deps.logger.child({ component: "indexer" });
      const { layout } = deps.hub;
      // One timer for the heartbeat and prune of every partition this process leads.
      const housekeeping = createIndexHousekeeping({
        store,
        logger,
        retentionMs: parseDuration(config.nats.events_max_age),
      });
      // One indexer per partition, each on its own lease and with its own position in the store;
      // those this process folds share one round pace (shared/projection/pacer.ts).
      const pacer = createRoundPacer();
      for (let partition = 0; partition < layout.partitions; partition++) {
        const partitionLogger = layout.partitions === 1 ? logger : logger.child({ partition });
        const indexer = createIndexer({
          nc: deps.hub.nc,
          js: deps.hub.js,
          jsm: deps.hub.jsm,
          layout,
          partition,
          store,
          logger: partitionLogger,
          lingerMs: parseDuration(config.index.linger),
          housekeeping,
          // One writer per partition at a time: the partition's lease (at P > 1 a claim).
          lease: leases.lease("indexer", partition),
          pacer,
          backlog,
          ...(feeds ? { feeds } : {}),
        });
        await indexer.start();
        stoppables.push({ name: `indexer p${partition}`, stop: indexer.stop });
      }
      stoppables.push({ name: "index housekeeping", stop: housekeeping.stop });
    },
    async close() {
      await store?.close();
    },
  };
}
