export * from "./callback.ts";
export * from "./decide.ts";
export * from "./events.ts";
export * from "./evolve.ts";
export * from "./fingerprint.ts";
export * from "./job.ts";
