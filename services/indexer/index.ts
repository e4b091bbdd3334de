export { INDEX_CONSUMER } from "./durable.ts";
export {
  createIndexHousekeeping,
  dueBeats,
  HEARTBEAT_MS,
  type IndexHousekeeping,
  type IndexPartitionState,
} from "./housekeeping.ts";
export { createIndexer, type Indexer, type IndexerDeps } from "./indexer.ts";
export { rebuildIndex } from "./rebuild.ts";
