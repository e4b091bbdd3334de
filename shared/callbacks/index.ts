export { callbackEgressPolicy } from "./policy.ts";
export { checkCallbackAtSubmit } from "./submit-check.ts";
