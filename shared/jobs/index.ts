export * from "./reader.ts";
