export * from "./formats.ts";
