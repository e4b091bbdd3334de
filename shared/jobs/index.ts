export * from "./generations.ts";
export * from "./history.ts";
export * from "./reader.ts";
export * from "./view-cache.ts";
export * from "./view-notices.ts";
