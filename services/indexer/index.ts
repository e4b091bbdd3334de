export { INDEX_CONSUMER } from "./durable.ts";
export { createIndexer, type Indexer, type IndexerDeps } from "./indexer.ts";
export { rebuildIndex } from "./rebuild.ts";
