export * from "./generations.ts";
export * from "./reader.ts";
export * from "./view-cache.ts";
