export { createExecutor, type Executor, type ToolSetReader } from "./executor.ts";
export { ATTEMPT_HEADER, signedTaskRequest } from "./http-post.ts";
export { type ExecutorService, startExecutorService } from "./service.ts";
export { createWatchdog, WATCHDOG_CONSUMER, waitUnread } from "./watchdog.ts";
