import type { RouteConfig } from "../../../shared/config/index.ts";
import { builtinKind } from "./builtin/index.ts";
import { httpKind } from "./http/index.ts";
import type { ExecutorKind } from "./kind.ts";
import { natsKind } from "./nats/index.ts";

export type { AdmittedJob, ExecutorKind, KindContext, KindRuntime } from "./kind.ts";

/**
 * Every executor kind, by the `kind` of a route's executor config. Typed over the config's union,
 * so a kind added to the config without a runtime here does not compile (and never falls back to
 * another kind's behaviour).
 */
export const EXECUTOR_KINDS: Readonly<Record<RouteConfig["executor"]["kind"], ExecutorKind>> = {
  builtin: builtinKind,
  http: httpKind,
  nats: natsKind,
};
