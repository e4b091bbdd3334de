export { buildCallbackBody, MAX_CALLBACK_BODY_BYTES, webhookIdFor } from "./payload.ts";
export {
  type AttemptOutcome,
  afterAttempt,
  type DeliveryTrigger,
  jittered,
  nextStep,
  type RetryPolicy,
  type Step,
} from "./plan.ts";
export {
  type RedeliveryDeps,
  type RedeliveryOptions,
  type RedeliveryRefusal,
  type RedeliveryResult,
  requestRedelivery,
} from "./redeliver.ts";
export {
  type CallbackService,
  type CallbackServiceDeps,
  createCallbackService,
  REDELIVERY_DURABLE,
} from "./service.ts";
export {
  ackWaitMs,
  type CallbackSettings,
  callbackSettings,
  maxDeliveries,
  scheduleFor,
} from "./settings.ts";
