import type { AnyElysia } from "elysia";
import { callbackEgressPolicy } from "../../shared/callbacks/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import {
  type ClientDirectory,
  type Config,
  createRouteTable,
  parseDuration,
} from "../../shared/config/index.ts";
import { openDispatchIndex } from "../../shared/dispatch/index.ts";
import { listenOrExplain } from "../../shared/http/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import {
  createJobIdDeriver,
  type IdGenerator,
  type JobIdDeriver,
  loadJobIdKey,
} from "../../shared/ids/index.ts";
import {
  createJobReader,
  createJobViewCache,
  followViewChanges,
  type JobReader,
} from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { redactUrl } from "../../shared/nats/index.ts";
import { createEgressChecker } from "../../shared/net/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import { createIngressPlugins, type IngressLimits, type IngressPlugins } from "./app.ts";
import { createAuthenticator } from "./auth.ts";
import { type AuthFailureLimiter, clientAddress, createAuthFailureLimiter } from "./auth-limit.ts";
import { createExecutorReportHandler } from "./executor-reports.ts";
import { serverErrorResponse } from "./http-edge.ts";
import { createJobsApi } from "./jobs-api.ts";
import { DEFAULT_MAX_BODY_BYTES, deriveBodyLimit } from "./limits.ts";
import { buildOpenApiDocument } from "./openapi.ts";
import { createSharedRateLimiter, openRateBucket } from "./shared-rate-limit.ts";
import { createStorageGuard } from "./storage-guard.ts";
import { createRunSubmitter } from "./submit-run.ts";

export type { IngressPlugins } from "./app.ts";
export { createAuthenticator } from "./auth.ts";
export { buildOpenApiDocument } from "./openapi.ts";
export { RunRequestSchema, validateRunRequest } from "./run-request.ts";
export { RATE_BUCKET } from "./shared-rate-limit.ts";

export interface IngressDeps {
  readonly hub: HubConnection;
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly metrics?: HubMetrics;
  /** The search index (GET /jobs); absent when index.enabled is false. */
  readonly index?: IndexStore;
  readonly tracing?: Tracing;
  /** The clients as reloaded (SIGHUP, a changed file); default: config.clients, fixed. */
  readonly clients?: ClientDirectory;
}

/** What the ingress shares with a surface mounted on its server. */
export interface IngressEdge {
  /** Failed authentications per source address, counted for both surfaces together. */
  readonly authFailures: AuthFailureLimiter;
  /** The caller's address, as server.trust_proxy_hops says to read it. */
  readonly addressOf: (request: Request) => string;
  readonly deriveJobId: JobIdDeriver;
  /** Read-your-writes for events appended outside the Client API (the job reader's). */
  readonly appended: JobReader["appended"];
}

export interface RunningIngress {
  readonly port: number;
  /** The body limit in force (server.max_body_bytes, or derived from NATS max_payload). */
  readonly maxBodyBytes: number;
  readonly url: string;
  /** Stops accepting, lets in-flight requests finish. The caller drains NATS afterwards. */
  stop(): Promise<void>;
  /** Rebuilds client authentication from the client directory after a reload. */
  reloadCredentials(): Promise<void>;
}

/**
 * The Client API, ready to serve: its plugins, and what it shares with a surface the runtime
 * serves beside it on the same server (the operator API).
 */
export interface Ingress {
  readonly plugins: IngressPlugins;
  readonly edge: IngressEdge;
  /** Serves `app` (these plugins, and whatever is mounted with them) on server.host/port. */
  listen(app: AnyElysia): RunningIngress;
}

/** Builds the Client API's parts over the hub connection; nothing listens yet. */
export async function createIngress(deps: IngressDeps): Promise<Ingress> {
  const { hub, config, logger, clock } = deps;
  // GET /jobs and replays of settled jobs answer from memory; other views are read from KV.
  const cache = createJobViewCache({ now: () => clock.now().getTime() });
  // The projector announces each settled view it rewrites (a retry, a redelivery request).
  const stopFollowing = followViewChanges(hub.nc, cache);
  const reader = createJobReader({ viewsOf: hub.viewsOf, jsm: hub.jsm, layout: hub.layout, cache });
  const state = { draining: false, stopFollowing };
  const routes = createRouteTable(config);
  const deriveJobId = createJobIdDeriver(await loadJobIdKey(hub.meta));
  const authFailures = createAuthFailureLimiter(clock, config.server.auth_failures_per_minute);
  let listening: { requestIP(request: Request): { address: string } | null } | undefined;
  const limits = ingressLimits(deps);
  const { maxBodyBytes } = limits;
  const entries = () => deps.clients?.entries() ?? config.clients;
  const auth = await createAuthenticator(entries());
  const plugins = createIngressPlugins({
    jobsApi: createJobsApi({
      ...(deps.index ? { store: deps.index } : {}),
      cancel: {
        nc: hub.nc,
        js: hub.js,
        jsm: hub.jsm,
        layout: hub.layout,
        clock,
        ids: deps.ids,
        route: routes.route,
        replicas: config.nats.replicas,
        logger,
        appended: reader.appended,
      },
      now: () => clock.now().getTime(),
      maxBodyBytes,
    }),
    auth,
    routes,
    submitter: createRunSubmitter({
      js: hub.js,
      jsm: hub.jsm,
      layout: hub.layout,
      reader,
      deriveJobId,
      ids: deps.ids,
      clock,
      publishTimeoutMs: parseDuration(config.nats.publish_timeout),
      storage: createStorageGuard({
        jsm: hub.jsm,
        layout: hub.layout,
        maxBytes: config.nats.events_max_bytes,
        clock,
      }),
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
    limits,
    logger,
    natsConnected: hub.connected,
    ready: async () => !state.draining && (await hub.topologyReady()),
    openapi: buildOpenApiDocument(),
    callbackUrls: createEgressChecker(callbackEgressPolicy(config.callbacks)),
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
    executorReports: await executorReportsOf(deps, maxBodyBytes),
  });
  const edge: IngressEdge = {
    authFailures,
    addressOf: (request) =>
      clientAddress(request, listening?.requestIP(request), config.server.trust_proxy_hops),
    deriveJobId,
    appended: reader.appended,
  };
  return {
    plugins,
    edge,
    listen(app) {
      const running = listenIngress(app, { config, logger, maxBodyBytes, state });
      listening = running.server;
      return { ...running.ingress, reloadCredentials: () => auth.update(entries()) };
    },
  };
}

/** The request limits of server.*: the body limit (configured, or derived from max_payload). */
function ingressLimits({ hub, config }: IngressDeps): IngressLimits {
  const metadata = {
    maxDepth: config.server.metadata.max_depth,
    maxMembers: config.server.metadata.max_members,
    maxStringLength: config.server.metadata.max_string_length,
  };
  return {
    maxBodyBytes: deriveBodyLimit({
      configured: config.server.max_body_bytes,
      maxPayload: hub.nc.info?.max_payload ?? DEFAULT_MAX_BODY_BYTES * 2,
      natsUrl: redactUrl(config.nats.url),
      metadata,
    }),
    metadata,
    maxUrlLength: config.server.max_url_length,
    maxHeaderBytes: config.server.max_header_bytes,
  };
}

/** POST /executor/v1/jobs/{job_id}/events, over the dispatch index the executor writes. */
async function executorReportsOf(deps: IngressDeps, maxBodyBytes: number) {
  const { hub, config } = deps;
  return createExecutorReportHandler({
    js: hub.js,
    jsm: hub.jsm,
    layout: hub.layout,
    routes: config.routes,
    index: await openDispatchIndex(hub.nc, {
      replicas: config.nats.replicas,
      ttlMs: parseDuration(config.nats.events_max_age),
    }),
    clock: deps.clock,
    ids: deps.ids,
    logger: deps.logger.child({ component: "executor-reports" }),
    maxBodyBytes,
  });
}

interface ListenDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  /** Set on stop: /readyz answers not ready from then on; the view-change notices end. */
  readonly state: { draining: boolean; readonly stopFollowing: () => void };
}

function listenIngress(app: AnyElysia, deps: ListenDeps) {
  const { config, logger, state } = deps;
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
  const url = `http://${config.server.host}:${server.port}`;
  logger.info({ url }, "ingress listening");
  const ingress: Omit<RunningIngress, "reloadCredentials"> = {
    port: server.port ?? 0,
    maxBodyBytes: deps.maxBodyBytes,
    url,
    async stop() {
      state.draining = true;
      state.stopFollowing();
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
  return { server, ingress };
}
