import { callbackEgressPolicy } from "../../shared/callbacks/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import {
  type ClientDirectory,
  type Config,
  createRouteTable,
  type OperatorConfig,
  type OperatorDirectory,
  parseDuration,
} from "../../shared/config/index.ts";
import { openDispatchIndex } from "../../shared/dispatch/index.ts";
import { listenOrExplain } from "../../shared/http/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import { createJobIdDeriver, type IdGenerator, loadJobIdKey } from "../../shared/ids/index.ts";
import { createJobReader, createJobViewCache } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { redactUrl } from "../../shared/nats/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import { createOperatorSurface } from "../admin-api/index.ts";
import { createIngressApp } from "./app.ts";
import { createAuthenticator } from "./auth.ts";
import { clientAddress, createAuthFailureLimiter } from "./auth-limit.ts";
import { createExecutorReportHandler } from "./executor-reports.ts";
import { serverErrorResponse } from "./http-edge.ts";
import { createJobsApi } from "./jobs-api.ts";
import { DEFAULT_MAX_BODY_BYTES, deriveBodyLimit } from "./limits.ts";
import { buildOpenApiDocument } from "./openapi.ts";
import { createSharedRateLimiter, openRateBucket } from "./shared-rate-limit.ts";
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
  /** The clients as reloaded (SIGHUP, a changed file); default: config.clients, fixed. */
  readonly clients?: ClientDirectory;
  /** The operators as reloaded, like `clients`; default: config.operators, fixed. */
  readonly operators?: OperatorDirectory;
}

export interface RunningIngress {
  readonly port: number;
  /** The body limit in force (server.max_body_bytes, or derived from NATS max_payload). */
  readonly maxBodyBytes: number;
  readonly url: string;
  /** Stops accepting, lets in-flight requests finish. The caller drains NATS afterwards. */
  stop(): Promise<void>;
  /** Rebuilds authentication from the client and operator directories after a reload. */
  reloadCredentials(): Promise<void>;
}

/**
 * Operators authenticate like clients (hashed tokens or JWTs), against their own list; they sign
 * no callbacks, so the client shape gets none.
 */
const asClients = (operators: readonly OperatorConfig[]) =>
  operators.map((o) => ({ ...o, callback_secrets: [] })) as unknown as Config["clients"];

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
  let listening: { requestIP(request: Request): { address: string } | null } | undefined;
  const metadata = {
    maxDepth: config.server.metadata.max_depth,
    maxMembers: config.server.metadata.max_members,
    maxStringLength: config.server.metadata.max_string_length,
  };
  const maxBodyBytes = deriveBodyLimit({
    configured: config.server.max_body_bytes,
    maxPayload: hub.nc.info?.max_payload ?? DEFAULT_MAX_BODY_BYTES * 2,
    natsUrl: redactUrl(config.nats.url),
    metadata,
  });
  // The operator API and console (issue 16) on this server: operator credentials only.
  const operatorEntries = () => deps.operators?.entries() ?? config.operators;
  const operatorAuth = await createAuthenticator(asClients(operatorEntries()));
  const operator = await createOperatorSurface({
    hub,
    config,
    ...(deps.index ? { store: deps.index } : {}),
    credentials: operatorAuth,
    ...(deps.operators ? { operators: deps.operators } : {}),
    limiter: authFailures,
    addressOf: (request) =>
      clientAddress(request, listening?.requestIP(request), config.server.trust_proxy_hops),
    deriveJobId,
    clock,
    ids: deps.ids,
    logger: logger.child({ component: "operator-api" }),
    appended: reader.appended,
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
      appended: reader.appended,
    },
    now: () => clock.now().getTime(),
    maxBodyBytes,
  });
  const entries = () => deps.clients?.entries() ?? config.clients;
  const auth = await createAuthenticator(entries());
  const app = createIngressApp({
    jobsApi,
    operator,
    auth,
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
    rateLimiter: createSharedRateLimiter({
      kv: await openRateBucket(hub.nc, { replicas: config.nats.replicas }),
      clock,
      logger: logger.child({ component: "rate-limit" }),
      connected: hub.connected,
    }),
    authFailures,
    trustProxyHops: config.server.trust_proxy_hops,
    limits: {
      maxBodyBytes,
      metadata,
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
      maxBodyBytes,
    }),
  });
  listenOrExplain(
    () =>
      app.listen({
        hostname: config.server.host,
        port: config.server.port,
        // Bun's own limit would answer a bare 413 or close the socket before any handler runs. Ours is
        // checked while reading (shared/http/json-body.ts); Bun then discards the rest of an oversized body and
        // the client gets a problem answer whatever the size (docs/security.md).
        maxRequestBodySize: Number.MAX_SAFE_INTEGER,
        // Never Bun's HTML error page, whatever NODE_ENV says; and a second hub on the same port
        // fails to start instead of sharing it (Elysia turns reusePort on by default).
        development: false,
        reusePort: false,
        error: serverErrorResponse,
      }),
    `${config.server.host}:${config.server.port} (server.host / server.port)`,
  );
  const server = app.server;
  if (!server) throw new Error("ingress did not start");
  listening = server;
  const url = `http://${config.server.host}:${server.port}`;
  logger.info({ url }, "ingress listening");
  return {
    port: server.port ?? 0,
    maxBodyBytes,
    url,
    async reloadCredentials() {
      await auth.update(entries());
      await operatorAuth.update(asClients(operatorEntries()));
    },
    async stop() {
      draining = true;
      // In-flight requests finish within the publish timeout. A connection still open after that
      // is a client that stopped sending a body we already answered (a 413): close it.
      const graceMs = parseDuration(config.nats.publish_timeout) + 2_000;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const graceful = await Promise.race([
        server.stop(false).then(() => true),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), graceMs);
        }),
      ]);
      clearTimeout(timer);
      if (!graceful) {
        logger.info({ grace_ms: graceMs }, "closing connections still open after the grace period");
        await server.stop(true);
      }
    },
  };
}
