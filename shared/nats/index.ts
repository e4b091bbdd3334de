export * from "./auth.ts";
export * from "./coalesce.ts";
export * from "./headers.ts";
export * from "./pub-ack-mux.ts";
export * from "./server.ts";
export * from "./status.ts";
export * from "./version.ts";
