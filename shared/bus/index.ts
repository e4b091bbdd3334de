export * from "./append.ts";
export * from "./codec.ts";
export * from "./consumers.ts";
export * from "./errors.ts";
export * from "./read.ts";
export * from "./stream-reader.ts";
export * from "./subjects.ts";
export * from "./topology.ts";
