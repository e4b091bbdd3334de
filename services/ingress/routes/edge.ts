import { Elysia } from "elysia";
import { asAnswerable } from "../../../shared/bus/index.ts";
import {
  ClientDisconnectedError,
  MalformedJsonError,
  problemResponse,
  SwitchyardError,
} from "../../../shared/errors/index.ts";
import { refuseUndecodablePath } from "../../../shared/http/index.ts";
import type { Logger } from "../../../shared/log/index.ts";
import type { HubMetrics } from "../../../shared/metrics/index.ts";
import {
  type EdgeLimits,
  edgeProblem,
  fallbackProblem,
  pathOf,
  unroutedProblem,
} from "../http-edge.ts";

export interface EdgePluginDeps {
  readonly limits: EdgeLimits;
  readonly logger: Logger;
  /** Counters for run answers (exposed on the admin port, never here). */
  readonly metrics?: HubMetrics;
}

/**
 * The checks and the error answer of every request on the server: URL, header and Host limits
 * before routing, and problem+json for whatever a route throws. A request hook runs before routing,
 * so it holds for the whole server wherever it is mounted; the error hook is declared global, so
 * it covers the routes of every plugin mounted beside this one (Elysia's hooks are local to their
 * plugin otherwise). Mounted first, its request check runs before any other.
 */
export function edgePlugin(deps: EdgePluginDeps) {
  const { logger } = deps;
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
  return (
    new Elysia({ name: "ingress-edge", normalize: false })
      .onRequest(({ request }) => edgeProblem(request, deps.limits))
      // A path that does not decode names nothing: 404 before any handler reads its parameters.
      .onTransform({ as: "global" }, refuseUndecodablePath)
      .onError({ as: "global" }, ({ error, request, code }) => {
        // Whatever goes wrong in here, the client still gets a problem answer.
        try {
          return errorAnswer(error, request, code);
        } catch {
          return fallbackProblem();
        }
      })
  );
}
