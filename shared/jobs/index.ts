/**
 * The job stream: each job's events on its subjects (append, read, status writes), the key and
 * history of its stored view, and the readers the services share.
 */
export * from "./append.ts";
export * from "./envelope.ts";
export * from "./generations.ts";
export * from "./history.ts";
export * from "./layout.ts";
export * from "./merged-reader.ts";
export * from "./partition.ts";
export * from "./read.ts";
export * from "./reader.ts";
export * from "./status.ts";
export * from "./subjects.ts";
export * from "./view-cache.ts";
export * from "./view-codec.ts";
export * from "./view-notices.ts";
