/**
 * Actions on a job that the Client API and the operator API share: cancel and retry. Each is a
 * domain decision (shared/domain/decide.ts) carried out with the same appends as the rest of the
 * hub, and recorded as events naming who acted.
 */
export * from "./accept.ts";
export * from "./cancel.ts";
export * from "./retry.ts";
