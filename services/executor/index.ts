export { createExecutor, type Executor } from "./executor.ts";
