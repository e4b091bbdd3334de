import { JobNotFoundError } from "../../shared/errors/index.ts";
import { type OperatorCaller, requireOperatorRole } from "./auth.ts";
import { type AdminContext, callerOf, noBody, ownerOf, requireEventStore } from "./context.ts";
import { noQuery } from "./search.ts";

/** Who acts on which job: the operator, and the client that owns the job. */
export interface JobActionTarget {
  readonly caller: OperatorCaller;
  readonly clientId: string;
}

export const jobNotFound = (jobId: string) =>
  new JobNotFoundError({ detail: `No job ${jobId.slice(0, 40)} exists.` });

/**
 * What every action on one job checks first, in this order: an operator (401), with the operator
 * role (403), CSRF for a console session, no query and no body, the event store reachable (503),
 * and a job that exists (404).
 */
export async function beginJobAction(
  ctx: AdminContext,
  request: Request,
  jobId: string,
): Promise<JobActionTarget> {
  const caller = await callerOf(ctx, request);
  requireOperatorRole(caller);
  ctx.auth.checkCsrf(request, caller);
  noQuery(request);
  await noBody(request);
  requireEventStore(ctx);
  const clientId = await ownerOf(ctx, jobId);
  if (clientId === undefined) throw jobNotFound(jobId);
  return { caller, clientId };
}
