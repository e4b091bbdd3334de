export * from "./coalesce.ts";
export * from "./server.ts";
