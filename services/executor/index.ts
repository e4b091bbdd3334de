export { ATTEMPT_HEADER, signedTaskRequest } from "./kinds/http/post.ts";
export { httpStanding } from "./kinds/http/standing.ts";
export {
  type AdmittedJob,
  type ExecutorKind,
  type ExecutorKindModule,
  type KindContext,
  type KindRuntime,
  registerExecutorKind,
} from "./kinds/index.ts";
export { type ExecutorService, startExecutorService } from "./service.ts";
