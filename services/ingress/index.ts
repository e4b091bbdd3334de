import { callbackEgressPolicy } from "../../shared/callbacks/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import { type Config, createRouteTable, parseDuration } from "../../shared/config/index.ts";
import { openDispatchIndex } from "../../shared/dispatch/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import { createJobIdDeriver, type IdGenerator, loadJobIdKey } from "../../shared/ids/index.ts";
import { createJobReader, createJobViewCache } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import { createOperatorSurface } from "../admin-api/index.ts";
import { createIngressApp } from "./app.ts";
import { createAuthenticator } from "./auth.ts";
import { clientAddress, createAuthFailureLimiter } from "./auth-limit.ts";
import { createExecutorReportHandler } from "./executor-reports.ts";
import { createJobsApi } from "./jobs-api.ts";
import { buildOpenApiDocument } from "./openapi.ts";
import { createRateLimiter } from "./rate-limit.ts";
import { createRunSubmitter } from "./submit-run.ts";

export { createIngressApp } from "./app.ts";
export { buildOpenApiDocument } from "./openapi.ts";
export { RunRequestSchema, validateRunRequest } from "./run-request.ts";

export interface IngressDeps {
  readonly hub: HubConnection;
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly metrics?: HubMetrics;
  /** The search index (GET /jobs, the operator API); absent when index.enabled is false. */
  readonly index?: IndexStore;
  /** The operator API and console, mounted on this server (services/admin-api). */
  readonly operator?: {
    readonly paths: readonly string[];
    handle(request: Request): Promise<Response>;
  };
  readonly tracing?: Tracing;
}

export interface RunningIngress {
  readonly port: number;
  readonly url: string;
  /** Stops accepting, lets in-flight requests finish. The caller drains NATS afterwards. */
  stop(): Promise<void>;
}

/** Starts the Client API HTTP server on config.server.host/port. */
export async function startIngress(deps: IngressDeps): Promise<RunningIngress> {
  const { hub, config, logger, clock } = deps;
  // GET /jobs and replays of settled jobs answer from memory; other views are read from KV.
  const cache = createJobViewCache({ now: () => clock.now().getTime() });
  const reader = createJobReader({ kv: hub.jobs, jsm: hub.jsm, cache });
  let draining = false;
  const routes = createRouteTable(config);
  const deriveJobId = createJobIdDeriver(await loadJobIdKey(hub.meta));
  const authFailures = createAuthFailureLimiter(clock, config.server.auth_failures_per_minute);
  let server: { requestIP(request: Request): { address: string } | null } | undefined;
  // The operator API and console (issue 16) on this server: operator credentials only.
  const operator = await createOperatorSurface({
    hub,
    config,
    ...(deps.index ? { store: deps.index } : {}),
    // Operators authenticate like clients (hashed tokens or JWTs), against their own list.
    credentials: await createAuthenticator(config.operators as unknown as Config["clients"]),
    limiter: authFailures,
    addressOf: (request) =>
      clientAddress(request, server?.requestIP(request), config.server.trust_proxy_hops),
    deriveJobId,
    clock,
    ids: deps.ids,
    logger: logger.child({ component: "operator-api" }),
  });
  const jobsApi = createJobsApi({
    ...(deps.index ? { store: deps.index } : {}),
    cancel: {
      nc: hub.nc,
      js: hub.js,
      jsm: hub.jsm,
      clock,
      ids: deps.ids,
      route: routes.route,
      replicas: config.nats.replicas,
      logger,
    },
    now: () => clock.now().getTime(),
  });
  const app = createIngressApp({
    jobsApi,
    operator,
    auth: await createAuthenticator(config.clients),
    routes,
    submitter: createRunSubmitter({
      js: hub.js,
      jsm: hub.jsm,
      reader,
      deriveJobId,
      ids: deps.ids,
      clock,
      publishTimeoutMs: parseDuration(config.nats.publish_timeout),
    }),
    reader,
    rateLimiter: createRateLimiter(clock),
    authFailures,
    trustProxyHops: config.server.trust_proxy_hops,
    limits: {
      maxBodyBytes: config.server.max_body_bytes,
      maxUrlLength: config.server.max_url_length,
      maxHeaderBytes: config.server.max_header_bytes,
    },
    logger,
    natsConnected: hub.connected,
    ready: async () => !draining && (await hub.topologyReady()),
    openapi: buildOpenApiDocument(),
    callbackPolicy: callbackEgressPolicy(config.callbacks),
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
    executorReports: createExecutorReportHandler({
      js: hub.js,
      jsm: hub.jsm,
      routes: config.routes,
      index: await openDispatchIndex(hub.nc, {
        replicas: config.nats.replicas,
        ttlMs: parseDuration(config.nats.events_max_age),
      }),
      clock,
      ids: deps.ids,
      logger: logger.child({ component: "executor-reports" }),
      maxBodyBytes: config.server.max_body_bytes,
    }),
  });
  app.listen({
    hostname: config.server.host,
    port: config.server.port,
    // Bun's own limit answers 413 without a problem body; ours (checked in the handler) is lower.
    maxRequestBodySize: config.server.max_body_bytes * 2 + 65_536,
  });
  const listening = app.server;
  if (!listening) throw new Error("ingress did not start");
  server = listening;
  const url = `http://${config.server.host}:${listening.port}`;
  logger.info({ url }, "ingress listening");
  return {
    port: listening.port ?? 0,
    url,
    async stop() {
      draining = true;
      await app.stop(false);
    },
  };
}
