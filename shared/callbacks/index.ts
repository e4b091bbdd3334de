export { callbackEgressPolicy } from "./policy.ts";
export {
  type RedeliveryDeps,
  type RedeliveryOptions,
  type RedeliveryRefusal,
  type RedeliveryResult,
  requestRedelivery,
} from "./redelivery.ts";
export { checkCallbackAtSubmit } from "./submit-check.ts";
