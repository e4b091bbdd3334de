export * from "./duration.ts";
export * from "./formats.ts";
