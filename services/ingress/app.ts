import type { AnyElysia } from "elysia";
import type { RouteTable } from "../../shared/config/index.ts";
import type { JobReader } from "../../shared/jobs/index.ts";
import type { JsonShapeLimits } from "../../shared/json/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import type { EgressChecker } from "../../shared/net/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import { type ClientAuthDeps, createClientAuth } from "./client-auth.ts";
import type { ExecutorReportHandler } from "./executor-reports.ts";
import type { EdgeLimits } from "./http-edge.ts";
import type { JobsApi } from "./jobs-api.ts";
import { edgePlugin } from "./routes/edge.ts";
import { executorReportsPlugin } from "./routes/executor-reports.ts";
import { healthPlugin } from "./routes/health.ts";
import { jobsPlugin } from "./routes/jobs.ts";
import { runsPlugin } from "./routes/runs.ts";
import type { RunSubmitter } from "./submit-run.ts";

export interface IngressLimits extends EdgeLimits {
  readonly maxBodyBytes: number;
  /** Bounds on a run's metadata (server.metadata); defaults when absent. */
  readonly metadata?: JsonShapeLimits;
}

export interface IngressPluginDeps extends ClientAuthDeps {
  readonly routes: RouteTable;
  readonly submitter: RunSubmitter;
  readonly reader: JobReader;
  readonly limits: IngressLimits;
  readonly logger: Logger;
  /** False while NATS is disconnected: answer 503 at once instead of waiting for a timeout. */
  readonly natsConnected: () => boolean;
  /** /readyz: NATS connected, topology present, not draining. */
  readonly ready: () => Promise<boolean>;
  readonly openapi: unknown;
  /**
   * The egress policy's checks of callback_url (callbacks.allow_cidrs / allow_private), made once
   * and remembered per URL; default: public addresses only.
   */
  readonly callbackUrls?: EgressChecker;
  /** Counters for run answers (exposed on the admin port, never here). */
  readonly metrics?: HubMetrics;
  /** GET /jobs and POST /jobs/{job_id}/cancel (jobs-api.ts). */
  readonly jobsApi?: JobsApi;
  /** The accept span of POST /run, whose context every event of the job carries. */
  readonly tracing?: Tracing;
  /** POST /executor/v1/jobs/{job_id}/events (docs/executors.md); absent: 404. */
  readonly executorReports?: ExecutorReportHandler;
}

/** The Client API v1 as Elysia plugins, for the runtime to mount on one server. */
export interface IngressPlugins {
  /** Edge checks and the problem+json error answer for every route of the server: mount first. */
  readonly edge: AnyElysia;
  /** Runs, jobs, executor reports, health: each a plugin of its own. */
  readonly routes: readonly AnyElysia[];
}

export function createIngressPlugins(deps: IngressPluginDeps): IngressPlugins {
  const authenticate = createClientAuth(deps);
  return {
    edge: edgePlugin(deps),
    routes: [
      runsPlugin({ ...deps, authenticate }),
      jobsPlugin({ ...deps, authenticate }),
      executorReportsPlugin(deps),
      healthPlugin(deps),
    ],
  };
}
