/**
 * The search index: the second projection of the events stream, into SQLite or PostgreSQL
 * (docs/architecture.md, "The search index"). Written by the indexer, read by the Client API list
 * and the operator API.
 */
export * from "./cursor.ts";
export * from "./open.ts";
export * from "./params.ts";
export { openPostgresIndex } from "./postgres.ts";
export { withRequestIdLookup } from "./request-lookup.ts";
export { openSqliteIndex } from "./sqlite.ts";
export * from "./types.ts";
export { readsAnswerUnavailable } from "./unavailable.ts";
