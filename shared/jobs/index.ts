export * from "./reader.ts";
export * from "./view-cache.ts";
