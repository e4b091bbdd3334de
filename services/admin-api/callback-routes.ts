import { type RedeliveryResult, requestRedelivery } from "../../shared/callbacks/index.ts";
import { InvalidRequestError, JobNotFoundError } from "../../shared/errors/index.ts";
import type { JobFilter } from "../../shared/search/index.ts";
import { requireOperatorRole } from "./auth.ts";
import {
  type AdminContext,
  callerOf,
  json,
  operatorName,
  readBody,
  requireEventStore,
  requireStore,
} from "./context.ts";
import { BulkTooLargeError } from "./errors.ts";
import { beginJobAction } from "./job-action.ts";
import { searchJobs } from "./jobs-routes.ts";
import { filterOf, invalid, noQuery, WHERE_KEYS } from "./search.ts";

/** GET /admin/v1/callbacks/failed: jobs whose completion callback failed, with the search filters. */
export async function failedCallbacks(ctx: AdminContext, request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (url.searchParams.has("callback")) {
    // Authentication first (401 before any 400), as on every endpoint; searchJobs does it again
    // otherwise, so only this refusal needs its own.
    await callerOf(ctx, request);
    throw invalid("callback", "is always 'failed' here");
  }
  url.searchParams.set("callback", "failed");
  return searchJobs(ctx, new Request(url.toString(), request));
}

const redeliveryAnswer = (jobId: string, result: RedeliveryResult) =>
  result.kind === "requested"
    ? { job_id: jobId, requested: true }
    : { job_id: jobId, requested: false, reason: result.reason, message: result.message };

/** POST /admin/v1/callbacks/{job_id}/redeliver: one callback again (same webhook-id). */
export async function redeliverOne(
  ctx: AdminContext,
  request: Request,
  jobId: string,
): Promise<Response> {
  const { caller, clientId } = await beginJobAction(ctx, request, jobId);
  const result = await requestRedelivery(
    { js: ctx.js, jsm: ctx.jsm, layout: ctx.layout, clock: ctx.clock, ids: ctx.ids },
    jobId,
    { clientId, requestedBy: operatorName(caller) },
  );
  ctx.logger.info(
    { operator: caller.operator.id, job_id: jobId, outcome: result.kind },
    "operator redelivery",
  );
  if (result.kind === "refused" && result.reason === "unknown_job") {
    throw new JobNotFoundError({ detail: result.message });
  }
  return json(redeliveryAnswer(jobId, result), result.kind === "requested" ? 202 : 409);
}

/** The `where` of a bulk action: the search filters as an object of strings or string lists. */
function whereFilter(where: unknown): JobFilter {
  if (where === undefined) return {};
  if (where === null || typeof where !== "object" || Array.isArray(where)) {
    throw new InvalidRequestError({
      detail: "where: must be an object of search filters",
      errors: [{ pointer: "/where", message: "must be an object" }],
    });
  }
  const url = new URL("http://where/");
  for (const [key, value] of Object.entries(where)) {
    if (!WHERE_KEYS.includes(key) || key === "callback") {
      throw new InvalidRequestError({
        detail: `where.${key}: is not a filter of failed callbacks`,
        errors: [{ pointer: `/where/${key}`, message: "unknown filter" }],
      });
    }
    const list = Array.isArray(value) ? value : [value];
    for (const item of list) {
      if (typeof item !== "string") {
        throw new InvalidRequestError({
          detail: `where.${key}: must be a string or a list of strings`,
          errors: [{ pointer: `/where/${key}`, message: "must be a string or a list of strings" }],
        });
      }
      url.searchParams.append(key, item);
    }
  }
  return filterOf(url);
}

/**
 * POST /admin/v1/callbacks/redeliver {"where": {…}, "dry_run": true}: redelivers every failed
 * callback the filter matches, at most `admin_api.max_bulk` (a wider filter is refused, asking for
 * a narrower one); a dry run only says how many it would touch.
 */
export async function redeliverBulk(ctx: AdminContext, request: Request): Promise<Response> {
  const caller = await callerOf(ctx, request);
  requireOperatorRole(caller);
  ctx.auth.checkCsrf(request, caller);
  noQuery(request);
  const store = requireStore(ctx);
  const body = (await readBody(request)) ?? {};
  for (const key of Object.keys(body)) {
    if (key !== "where" && key !== "dry_run") {
      throw new InvalidRequestError({
        detail: `${key}: unknown field`,
        errors: [{ pointer: `/${key}`, message: "unknown field" }],
      });
    }
  }
  if (body.dry_run !== undefined && typeof body.dry_run !== "boolean") {
    throw new InvalidRequestError({
      detail: "dry_run: must be true or false",
      errors: [{ pointer: "/dry_run", message: "must be a boolean" }],
    });
  }
  const filter: JobFilter = { ...whereFilter(body.where), callbackStatuses: ["failed"] };
  const max = ctx.config.admin_api.max_bulk;
  const matched = await store.count(filter, max);
  if (matched > max) {
    throw new BulkTooLargeError({
      detail: `The filter matches more than ${max} failed callbacks (admin_api.max_bulk); narrow it, e.g. by client, route or a time window.`,
    });
  }
  if (body.dry_run === true) return json({ dry_run: true, matched });
  requireEventStore(ctx);
  const results: ReturnType<typeof redeliveryAnswer>[] = [];
  let after: Parameters<typeof store.page>[0]["after"];
  do {
    const page = await store.page({ filter, limit: 200, ...(after ? { after } : {}) });
    for (const view of page.views) {
      const result = await requestRedelivery(
        { js: ctx.js, jsm: ctx.jsm, layout: ctx.layout, clock: ctx.clock, ids: ctx.ids },
        view.job_id,
        { clientId: view.client_id, requestedBy: operatorName(caller) },
      );
      results.push(redeliveryAnswer(view.job_id, result));
    }
    after = page.next ?? undefined;
  } while (after !== undefined && results.length < max);
  const requested = results.filter((r) => r.requested).length;
  ctx.logger.info({ operator: caller.operator.id, matched, requested }, "operator bulk redelivery");
  return json(
    { dry_run: false, matched, requested, refused: results.filter((r) => !r.requested) },
    202,
  );
}
