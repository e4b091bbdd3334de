import { Elysia } from "elysia";
import { asAnswerable, classifyNatsError, requireConnected } from "../../shared/bus/index.ts";
import { checkCallbackAtSubmit } from "../../shared/callbacks/index.ts";
import type { ClientConfig, RouteTable } from "../../shared/config/index.ts";
import { routeAllowed } from "../../shared/config/index.ts";
import { toJobResource } from "../../shared/domain/index.ts";
import {
  ClientDisconnectedError,
  InvalidRequestError,
  JobNotFoundError,
  MalformedJsonError,
  NotFoundError,
  problemResponse,
  RateLimitedError,
  RouteForbiddenError,
  SwitchyardError,
  UnauthorizedError,
} from "../../shared/errors/index.ts";
import { refuseUndecodablePath } from "../../shared/http/index.ts";
import { readJsonBody } from "../../shared/http/json-body.ts";
import { JOB_ID_PATTERN } from "../../shared/ids/index.ts";
import type { JobReader } from "../../shared/jobs/index.ts";
import type { JsonShapeLimits } from "../../shared/json/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import type { EgressPolicy } from "../../shared/net/index.ts";
import { endWhenSettled, NO_TRACING, type Tracing } from "../../shared/telemetry/index.ts";
import { traceIdOf, traceparentFrom } from "../../shared/trace/index.ts";
import type { Authenticator } from "./auth.ts";
import { type AuthFailureLimiter, clientAddress, type SocketAddress } from "./auth-limit.ts";
import { EXECUTOR_REPORT_PATH, type ExecutorReportHandler } from "./executor-reports.ts";
import {
  type EdgeLimits,
  edgeProblem,
  fallbackProblem,
  pathOf,
  unroutedProblem,
} from "./http-edge.ts";
import type { JobsApi } from "./jobs-api.ts";
import type { RateLimiter } from "./rate-limit.ts";
import { validateRunRequest } from "./run-request.ts";
import type { SharedRateLimiter } from "./shared-rate-limit.ts";
import type { RunSubmitter } from "./submit-run.ts";

export interface IngressLimits extends EdgeLimits {
  readonly maxBodyBytes: number;
  /** Bounds on a run's metadata (server.metadata); defaults when absent. */
  readonly metadata?: JsonShapeLimits;
}

/** The part of Bun's server the ingress uses: the peer address of a request. */
interface PeerSource {
  requestIP(request: Request): SocketAddress | null;
}

export interface IngressDeps {
  readonly auth: Authenticator;
  readonly routes: RouteTable;
  readonly submitter: RunSubmitter;
  readonly reader: JobReader;
  /** Per-client limits: shared by every replica (KV), or this process's own (tests, tools). */
  readonly rateLimiter: RateLimiter | SharedRateLimiter;
  readonly limits: IngressLimits;
  readonly logger: Logger;
  /** False while NATS is disconnected: answer 503 at once instead of waiting for a timeout. */
  readonly natsConnected: () => boolean;
  /** /readyz: NATS connected, topology present, not draining. */
  readonly ready: () => Promise<boolean>;
  readonly openapi: unknown;
  /** Failed authentications per source address; checked before any token (docs/security.md). */
  readonly authFailures?: AuthFailureLimiter;
  /** server.trust_proxy_hops: how many X-Forwarded-For entries from the right are trusted. */
  readonly trustProxyHops?: number;
  /** Egress policy for callback_url (callbacks.allow_cidrs / allow_private); default: public only. */
  readonly callbackPolicy?: EgressPolicy;
  /** Counters for run answers (exposed on the admin port, never here). */
  readonly metrics?: HubMetrics;
  /** GET /jobs and POST /jobs/{job_id}/cancel (jobs-api.ts). */
  readonly jobsApi?: JobsApi;
  /** The operator API (/admin/v1) and the console: handled whole by their own app. */
  readonly operator?: {
    readonly paths: readonly string[];
    handle(request: Request): Promise<Response>;
  };
  /** The accept span of POST /run, whose context every event of the job carries. */
  readonly tracing?: Tracing;
  /** POST /executor/v1/jobs/{job_id}/events (docs/executors.md); absent: 404. */
  readonly executorReports?: ExecutorReportHandler;
}

const NO_STORE = { "cache-control": "no-store" };

function json(body: unknown, status: number, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...NO_STORE, ...headers },
  });
}

/**
 * The Client API v1 HTTP surface. Validation is done by hand with compiled TypeBox checks rather
 * than Elysia's body schema: Elysia's default normalisation strips unknown fields, and the spec
 * requires them refused by name.
 */
export function createIngressApp(deps: IngressDeps) {
  const { logger } = deps;

  const authenticate = async (
    request: Request,
    server: PeerSource | null,
  ): Promise<ClientConfig> => {
    const limiter = deps.authFailures;
    let found: string | undefined;
    const address = () => {
      found ??= clientAddress(request, server?.requestIP(request), deps.trustProxyHops ?? 0);
      return found;
    };
    const blocked = limiter?.mayBlock() ? limiter.blockedFor(address()) : 0;
    if (blocked > 0) {
      // Refused before the token is read: brute force and JWT-verification floods stay cheap.
      throw new RateLimitedError({
        detail: "Too many failed authentications from this address.",
        headers: { "retry-after": String(blocked) },
      });
    }
    const client = await deps.auth
      .authenticate(request.headers.get("authorization"))
      .catch((err: unknown) => {
        if (err instanceof UnauthorizedError) limiter?.failed(address());
        throw err;
      });
    const wait = await deps.rateLimiter.take(`client:${client.id}`, client.runs_per_minute);
    if (wait > 0) {
      throw new RateLimitedError({
        detail: `Client rate limit of ${client.runs_per_minute} requests per minute reached.`,
        headers: { "retry-after": String(wait) },
      });
    }
    return client;
  };

  const tracing = deps.tracing ?? NO_TRACING;

  /** The operator API and console answer for themselves (their own auth, roles and errors). */
  const operatorRequest = (request: Request): Promise<Response> | undefined => {
    const operator = deps.operator;
    if (!operator) return undefined;
    const path = new URL(request.url).pathname;
    const served = operator.paths.some((p) => path === p || path.startsWith(`${p}/`));
    return served ? operator.handle(request) : undefined;
  };

  const requireNats = () =>
    requireConnected(
      deps.natsConnected,
      "The event store is not reachable; nothing was persisted. Retry with the same request_id.",
    );

  const errorAnswer = (thrown: unknown, request: Request, code: unknown): Response => {
    if (code === "NOT_FOUND") return unroutedProblem(request);
    if (code === "PARSE") {
      return problemResponse(new MalformedJsonError({ detail: "The body could not be parsed." }));
    }
    // The handlers classify NATS failures where they call it; this catches any they do not, so
    // NATS going away is always a 503 to retry, never a 500.
    const error = asAnswerable(thrown);
    const path = pathOf(request);
    if (request.method === "POST" && path === "/run") {
      deps.metrics?.runs.inc({
        outcome: "refused",
        code: error instanceof SwitchyardError ? error.code : "internal_error",
      });
    }
    if (error instanceof ClientDisconnectedError) {
      // The client went away; nothing failed on this side.
      logger.info({ path }, "client disconnected before its request was complete");
    } else if (!(error instanceof SwitchyardError)) {
      logger.error({ err: error, path }, "unhandled error");
    }
    return problemResponse(error, path);
  };

  return new Elysia({ normalize: false })
    .onRequest(({ request }) => edgeProblem(request, deps.limits))
    .onRequest(({ request }) => operatorRequest(request))
    .onError(({ error, request, code }) => {
      // Whatever goes wrong in here, the client still gets a problem answer.
      try {
        return errorAnswer(error, request, code);
      } catch {
        return fallbackProblem();
      }
    })
    .onTransform(refuseUndecodablePath)
    .post(
      "/run",
      async ({ request, server }) => {
        const client = await authenticate(request, server);
        const { value, text } = await readJsonBody(request, deps.limits.maxBodyBytes);
        const body = validateRunRequest(value, { text, metadata: deps.limits.metadata });
        const route = deps.routes.route(body.route);
        if (!route || !routeAllowed(client.routes, body.route)) {
          // One answer for unknown and not-allowed routes, so routes cannot be probed.
          throw new RouteForbiddenError({
            detail: "This client may not run that route.",
          });
        }
        const inputBytes = Buffer.byteLength(body.input, "utf8");
        if (inputBytes > route.max_input_bytes) {
          throw new InvalidRequestError({
            detail: `input is ${inputBytes} bytes; route allows at most ${route.max_input_bytes}.`,
            errors: [
              { pointer: "/input", message: `must be at most ${route.max_input_bytes} bytes` },
            ],
          });
        }
        if (body.callback_url !== undefined) {
          checkCallbackAtSubmit(client, body.callback_url, deps.callbackPolicy ?? {});
        }
        requireNats();
        const incoming = request.headers.get("traceparent");
        const span = tracing.start("POST /run", {
          parent: incoming ?? undefined,
          kind: "server",
          attributes: { client_id: client.id, route: body.route, "http.route": "/run" },
        });
        // Tracing on: the job's trace context is the accept span's; off: the caller's, or a new one.
        const traceparent = span.traceparent ?? traceparentFrom(incoming);
        const outcome = await endWhenSettled(
          span,
          deps.submitter.submit(client, body, traceparent),
          (result) => ({
            job_id: result.job.job_id,
            outcome: result.created ? "accepted" : "replayed",
          }),
        );
        const fields = {
          client_id: client.id,
          request_id: body.request_id,
          job_id: outcome.job.job_id,
          route: body.route,
          trace_id: traceIdOf(traceparent),
        };
        deps.metrics?.runs.inc({ outcome: outcome.created ? "accepted" : "replayed", code: "" });
        if (outcome.created) {
          logger.info(fields, "run accepted");
          return json(outcome.job, 202, { location: `/jobs/${outcome.job.job_id}`, traceparent });
        }
        logger.info(fields, "run replayed");
        return json(outcome.job, 200, { location: `/jobs/${outcome.job.job_id}`, traceparent });
      },
      { parse: "none" },
    )
    .get("/jobs/:job_id", async ({ request, params, server }) => {
      const client = await authenticate(request, server);
      const notFound = () =>
        new JobNotFoundError({ detail: "No job with this id exists for this client." });
      if (!JOB_ID_PATTERN.test(params.job_id)) throw notFound();
      requireNats();
      const view = await deps.reader.get(client.id, params.job_id).catch((err: unknown) => {
        throw classifyNatsError(err) ?? err;
      });
      if (!view) throw notFound();
      return json(toJobResource(view), 200);
    })
    .get("/jobs", async ({ request, server }) => {
      const client = await authenticate(request, server);
      if (!deps.jobsApi) throw new NotFoundError({ detail: "Listing jobs is not enabled here." });
      return deps.jobsApi.list(request, client);
    })
    .post(
      "/jobs/:job_id/cancel",
      async ({ request, params, server }) => {
        const client = await authenticate(request, server);
        if (!deps.jobsApi) throw new NotFoundError({ detail: "Cancel is not enabled here." });
        requireNats();
        return deps.jobsApi.cancel(request, client, params.job_id);
      },
      { parse: "none" },
    )
    .post(
      EXECUTOR_REPORT_PATH,
      ({ request, params }) => {
        if (!deps.executorReports) {
          throw new NotFoundError({ detail: "Executor reports are not enabled here." });
        }
        requireNats();
        return deps.executorReports.handle(request, params.job_id);
      },
      { parse: "none" },
    )
    .get("/healthz", () => json({ status: "ok" }, 200))
    .get("/readyz", async () =>
      (await deps.ready()) ? json({ status: "ready" }, 200) : json({ status: "not_ready" }, 503),
    )
    .get("/openapi.json", () => json(deps.openapi, 200));
}
