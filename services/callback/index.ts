export { destinationOf } from "./lanes.ts";
export {
  buildCallbackBody,
  type CompletedJob,
  completedJobOf,
  MAX_CALLBACK_BODY_BYTES,
  webhookIdFor,
} from "./payload.ts";
export {
  type CallbackService,
  type CallbackServiceDeps,
  createCallbackService,
} from "./service.ts";
export {
  ackWaitMs,
  type CallbackSettings,
  callbackSettings,
  scheduleFor,
} from "./settings.ts";
