export { ATTEMPT_HEADER, signedTaskRequest } from "./http-post.ts";
export { httpStanding } from "./kinds/http/standing.ts";
export { EXECUTOR_KINDS } from "./kinds/index.ts";
export { type ExecutorService, startExecutorService } from "./service.ts";
