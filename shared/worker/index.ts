/**
 * The NATS worker SDK and the task protocol shared by the executor service and workers
 * (docs/executors.md).
 */

export { type WorkerNatsSettings, workerConnectOptions } from "./connect.ts";
export * from "./protocol.ts";
export { type PullLoop, type PullLoopOptions, runPullLoop, TaskSet } from "./pull.ts";
export {
  createWorker,
  TaskCancelledError,
  type TaskContext,
  TaskFailedError,
  TaskRejectedError,
  type Worker,
  type WorkerLogger,
  type WorkerOptions,
} from "./worker.ts";
