/**
 * Scheduled hub work that outlives a process: deadline timers and callback wake-ups, in their
 * work-queue streams. The executor and callback services consume them; the CLI (redelivery,
 * migration) and the executor publish them.
 */
export * from "./callback-wakeup.ts";
export * from "./cancel-notice.ts";
export * from "./deadline-timer.ts";
export * from "./streams.ts";
