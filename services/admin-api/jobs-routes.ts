import { cancelJob, retryJob } from "../../shared/actions/index.ts";
import { JobFinalError, RequestConflictError } from "../../shared/errors/index.ts";
import { foldHistory, readJobHistory } from "../../shared/jobs/index.ts";
import { encodeCursor, listHeaders } from "../../shared/search/index.ts";
import {
  type AdminContext,
  callerOf,
  json,
  ownerOf,
  requireEventStore,
  requireStore,
} from "./context.ts";
import { JobNotRetryableError } from "./errors.ts";
import { beginJobAction, jobNotFound } from "./job-action.ts";
import { adminJob, callbackAttempts, timelineEntry } from "./redact.ts";
import { noQuery, parseSearch } from "./search.ts";

/** GET /admin/v1/jobs: search across clients, newest first, keyset pages. */
export async function searchJobs(ctx: AdminContext, request: Request): Promise<Response> {
  const caller = await callerOf(ctx, request);
  const store = requireStore(ctx);
  const query = parseSearch(new URL(request.url));
  const [page, position] = await Promise.all([store.page(query), store.position()]);
  return json(
    {
      jobs: page.views.map((v) => adminJob(v, caller.operator.read_payloads)),
      next_cursor: page.next === null ? null : encodeCursor(page.next),
    },
    200,
    listHeaders(position, ctx.clock.now().getTime()),
  );
}

/**
 * GET /admin/v1/jobs/{job_id}: the job as its events fold now (read from the stream, so it is
 * never behind), its timeline (every event with sequence, time and type), its callback attempts
 * and the links between retried jobs. Input and output only with read_payloads.
 */
export async function jobDetail(
  ctx: AdminContext,
  request: Request,
  jobId: string,
): Promise<Response> {
  const caller = await callerOf(ctx, request);
  noQuery(request);
  requireEventStore(ctx);
  const clientId = await ownerOf(ctx, jobId);
  if (clientId === undefined) throw jobNotFound(jobId);
  const history = await readJobHistory(ctx, { client_id: clientId, job_id: jobId });
  const view = foldHistory(history);
  if (view === null) throw jobNotFound(jobId);
  const payloads = caller.operator.read_payloads;
  return json({
    job: adminJob(view, payloads),
    timeline: history.map((h) => timelineEntry(h, payloads)),
    callback_attempts: callbackAttempts(history),
    links: {
      ...(view.retry_of === undefined ? {} : { retry_of: view.retry_of }),
      ...(view.retried_as === undefined ? {} : { retried_as: view.retried_as }),
    },
  });
}

/** POST /admin/v1/jobs/{job_id}/cancel: as the client's cancel, naming the operator. */
export async function cancelAsOperator(
  ctx: AdminContext,
  request: Request,
  jobId: string,
): Promise<Response> {
  const { caller, clientId } = await beginJobAction(ctx, request, jobId);
  const outcome = await cancelJob(
    {
      nc: ctx.nc,
      js: ctx.js,
      jsm: ctx.jsm,
      layout: ctx.layout,
      clock: ctx.clock,
      ids: ctx.ids,
      route: ctx.routes.route,
      replicas: ctx.config.nats.replicas,
      logger: ctx.logger,
      ...(ctx.appended ? { appended: ctx.appended } : {}),
    },
    { clientId, jobId, by: { kind: "operator", id: caller.operator.id } },
  );
  ctx.logger.info(
    { operator: caller.operator.id, job_id: jobId, outcome: outcome.kind },
    "operator cancel",
  );
  switch (outcome.kind) {
    case "unknown":
      throw jobNotFound(jobId);
    case "final":
      throw new JobFinalError({
        detail: `The job already ended with status ${outcome.job.status}; nothing to cancel.`,
      });
    default: {
      const status = outcome.kind === "cancelled" ? 202 : 200;
      return json({ job: adminJob(outcome.job, caller.operator.read_payloads) }, status);
    }
  }
}

/** POST /admin/v1/jobs/{job_id}/retry: a new job linked both ways; a repeat finds the same one. */
export async function retryAsOperator(
  ctx: AdminContext,
  request: Request,
  jobId: string,
): Promise<Response> {
  const { caller, clientId } = await beginJobAction(ctx, request, jobId);
  const outcome = await retryJob(
    {
      js: ctx.js,
      jsm: ctx.jsm,
      layout: ctx.layout,
      clock: ctx.clock,
      ids: ctx.ids,
      deriveJobId: ctx.deriveJobId,
    },
    { clientId, jobId, by: { kind: "operator", id: caller.operator.id } },
  );
  ctx.logger.info(
    { operator: caller.operator.id, job_id: jobId, outcome: outcome.kind },
    "operator retry",
  );
  switch (outcome.kind) {
    case "unknown":
      throw jobNotFound(jobId);
    case "not_retryable":
      throw new JobNotRetryableError({
        detail: `The job is ${outcome.status}; only a job that ended in error or rejected can be retried.`,
      });
    case "conflict":
      throw new RequestConflictError({ detail: "The retry's request_id is taken by another run." });
    case "retried":
      return json(
        { retry_of: jobId, job: adminJob(outcome.job, caller.operator.read_payloads) },
        outcome.created ? 202 : 200,
      );
    default: {
      const unreachable: never = outcome;
      return unreachable;
    }
  }
}
