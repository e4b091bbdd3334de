// Durations are a schema format, shared with the executor kinds' config (shared/executor-kinds).
export { DURATION_PATTERN, parseDuration } from "../schema/index.ts";
