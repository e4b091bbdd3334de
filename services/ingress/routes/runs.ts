import { Elysia } from "elysia";
import { checkCallbackAtSubmit } from "../../../shared/callbacks/index.ts";
import { type RouteTable, routeAllowed } from "../../../shared/config/index.ts";
import { InvalidRequestError, RouteForbiddenError } from "../../../shared/errors/index.ts";
import { readJsonBody } from "../../../shared/http/index.ts";
import type { JsonShapeLimits } from "../../../shared/json/index.ts";
import type { Logger } from "../../../shared/log/index.ts";
import type { HubMetrics } from "../../../shared/metrics/index.ts";
import { createEgressChecker, type EgressChecker } from "../../../shared/net/index.ts";
import { endWhenSettled, NO_TRACING, type Tracing } from "../../../shared/telemetry/index.ts";
import { traceIdOf, traceparentFrom } from "../../../shared/trace/index.ts";
import type { AuthenticateClient } from "../client-auth.ts";
import { validateRunRequest } from "../run-request.ts";
import type { RunSubmitter } from "../submit-run.ts";
import { json, requireNats } from "./respond.ts";

export interface RunsPluginDeps {
  readonly authenticate: AuthenticateClient;
  readonly routes: RouteTable;
  readonly submitter: RunSubmitter;
  readonly limits: {
    readonly maxBodyBytes: number;
    /** Bounds on a run's metadata (server.metadata); defaults when absent. */
    readonly metadata?: JsonShapeLimits;
  };
  readonly logger: Logger;
  /** False while NATS is disconnected: answer 503 at once instead of waiting for a timeout. */
  readonly natsConnected: () => boolean;
  /**
   * The egress policy's checks of callback_url (callbacks.allow_cidrs / allow_private), made once
   * and remembered per URL; default: public addresses only.
   */
  readonly callbackUrls?: EgressChecker;
  /** Counters for run answers (exposed on the admin port, never here). */
  readonly metrics?: HubMetrics;
  /** The accept span of POST /run, whose context every event of the job carries. */
  readonly tracing?: Tracing;
}

/**
 * POST /run. Validation is done by hand with compiled TypeBox checks rather than Elysia's body
 * schema: Elysia's default normalisation strips unknown fields, and the spec requires them refused
 * by name.
 */
export function runsPlugin(deps: RunsPluginDeps) {
  const { logger } = deps;
  const tracing = deps.tracing ?? NO_TRACING;
  const callbackUrls = deps.callbackUrls ?? createEgressChecker({});
  return new Elysia({ name: "ingress-runs", normalize: false }).post(
    "/run",
    async ({ request, server }) => {
      const client = await deps.authenticate(request, server);
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
        checkCallbackAtSubmit(client, body.callback_url, callbackUrls.url);
      }
      requireNats(deps.natsConnected);
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
  );
}
