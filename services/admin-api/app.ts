import { Elysia } from "elysia";
import { asAnswerable } from "../../shared/bus/index.ts";
import {
  ClientDisconnectedError,
  problemResponse,
  SwitchyardError,
} from "../../shared/errors/index.ts";
import { refuseUndecodablePath } from "../../shared/http/index.ts";
import { failedCallbacks, redeliverBulk, redeliverOne } from "./callback-routes.ts";
import { consoleRoutes } from "./console.ts";
import { type AdminContext, callerOf, json } from "./context.ts";
import { cancelAsOperator, jobDetail, retryAsOperator, searchJobs } from "./jobs-routes.ts";
import { counts, overview } from "./overview.ts";
import { noQuery } from "./search.ts";
import { createUnroutedAnswer } from "./unrouted.ts";

export const ADMIN_PREFIX = "/admin/v1";

/**
 * Headers on every operator API and console answer: a strict Content-Security-Policy (no inline
 * script or style, nothing from elsewhere: the console is self-contained), no framing, no
 * sniffing, no referrer.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
};

function secured(response: Response): Response {
  for (const [key, value] of Object.entries(SECURITY_HEADERS)) response.headers.set(key, value);
  return response;
}

/**
 * The operator API (`/admin/v1/…`, docs/api.md "Operator API") and the web console (at
 * `console.path`), one app the ingress forwards those paths to. Every route authenticates first
 * (operator credentials, never client tokens), then validates; actions need the operator role.
 */
export function createAdminApp(ctx: AdminContext) {
  const p = ADMIN_PREFIX;
  const unrouted = createUnroutedAnswer({
    prefix: p,
    ...(ctx.config.console.enabled ? { consolePath: ctx.config.console.path } : {}),
  });
  const app = new Elysia({ normalize: false })
    .onError(({ error: thrown, request, code }) => {
      const path = new URL(request.url).pathname;
      if (code === "NOT_FOUND") return secured(problemResponse(unrouted(request), path));
      // NATS going away mid-request (a timeout, no responders, a leader change) is a 503 the
      // operator can retry, not a server error.
      const error = asAnswerable(thrown);
      if (error instanceof ClientDisconnectedError) {
        // Nobody reads this answer; a client that went away is not a server error.
        ctx.logger.info({ path }, "client disconnected before its request was complete");
      } else if (!(error instanceof SwitchyardError)) {
        ctx.logger.error({ err: error, path }, "unhandled error in the operator API");
      }
      return secured(problemResponse(error, path));
    })
    .onAfterHandle(({ response }) => (response instanceof Response ? secured(response) : undefined))
    .onTransform(refuseUndecodablePath)
    .get(`${p}/session`, async ({ request }) => {
      const caller = await callerOf(ctx, request);
      noQuery(request);
      const { id, role, read_payloads } = caller.operator;
      return json({
        operator: { id, role, read_payloads },
        via: caller.via,
        ...(caller.csrf ? { csrf_token: caller.csrf } : {}),
      });
    })
    .get(`${p}/jobs`, ({ request }) => searchJobs(ctx, request))
    .get(`${p}/jobs/:job_id`, ({ request, params }) => jobDetail(ctx, request, params.job_id))
    .post(
      `${p}/jobs/:job_id/cancel`,
      ({ request, params }) => cancelAsOperator(ctx, request, params.job_id),
      {
        parse: "none",
      },
    )
    .post(
      `${p}/jobs/:job_id/retry`,
      ({ request, params }) => retryAsOperator(ctx, request, params.job_id),
      {
        parse: "none",
      },
    )
    .get(`${p}/callbacks/failed`, ({ request }) => failedCallbacks(ctx, request))
    .post(`${p}/callbacks/redeliver`, ({ request }) => redeliverBulk(ctx, request), {
      parse: "none",
    })
    .post(
      `${p}/callbacks/:job_id/redeliver`,
      ({ request, params }) => redeliverOne(ctx, request, params.job_id),
      { parse: "none" },
    )
    .get(`${p}/counts`, ({ request }) => counts(ctx, request))
    .get(`${p}/overview`, ({ request }) => overview(ctx, request))
    .all(`${p}/*`, ({ request }) => {
      throw unrouted(request);
    });
  // The same instance, so the hooks above (errors, security headers) cover the console too.
  if (ctx.config.console.enabled) consoleRoutes(app as unknown as Elysia, ctx);
  return app;
}

/** The ingress's view of the operator surface: which paths are its own, and how to answer. */
export function operatorSurface(ctx: AdminContext) {
  const app = createAdminApp(ctx);
  return {
    paths: ctx.config.console.enabled ? [ADMIN_PREFIX, ctx.config.console.path] : [ADMIN_PREFIX],
    handle: (request: Request) => app.handle(request),
  };
}
