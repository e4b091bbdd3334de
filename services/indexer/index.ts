export { createIndexer, INDEX_CONSUMER, type Indexer, type IndexerDeps } from "./indexer.ts";
export { rebuildIndex } from "./rebuild.ts";
