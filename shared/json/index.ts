export * from "./shape.ts";
