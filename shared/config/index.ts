export * from "./clients.ts";
export * from "./duration.ts";
export * from "./load.ts";
export { natsIssues } from "./nats-checks.ts";
export * from "./operations.ts";
export * from "./routes.ts";
export * from "./schema.ts";
