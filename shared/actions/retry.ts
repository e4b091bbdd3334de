import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { Clock } from "../clock/index.ts";
import {
  type Actor,
  decideRetry,
  evolve,
  type JobState,
  type JobStatus,
  type JobView,
  type RunRequested,
} from "../domain/index.ts";
import type { IdGenerator, JobIdDeriver } from "../ids/index.ts";
import { appendEvent, readLastEvent } from "../jobs/index.ts";

export interface RetryDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly deriveJobId: JobIdDeriver;
}

export type RetryOutcome =
  /** A new job (202), or the retry that existed already (200): `created` tells which. */
  | { readonly kind: "retried"; readonly created: boolean; readonly job: JobView }
  /** Only error and rejected jobs are retried (409 job_not_retryable). */
  | { readonly kind: "not_retryable"; readonly status: JobStatus }
  | { readonly kind: "unknown" }
  /** The derived request_id is taken by another body: never expected, reported as a conflict. */
  | { readonly kind: "conflict" };

async function readJob(
  jsm: JetStreamManager,
  clientId: string,
  jobId: string,
): Promise<{ run: RunRequested; view: JobView } | undefined> {
  const [run, job, ops] = await Promise.all([
    readLastEvent(jsm, clientId, jobId, "run"),
    readLastEvent(jsm, clientId, jobId, "job"),
    readLastEvent(jsm, clientId, jobId, "ops"),
  ]);
  if (run?.event.type !== "run.requested") return undefined;
  let state: JobState = evolve(null, run.event);
  for (const stored of [job, ops]) if (stored) state = evolve(state, stored.event);
  return state ? { run: run.event, view: state } : undefined;
}

/**
 * Retries a job that ended in error or rejected (operator API): a new run.requested for the same
 * client, route and input, with `retry_of` and a request_id derived from the old job, appended
 * exactly like POST /run (Nats-Msg-Id and expected subject sequence 0), so a repeated retry finds
 * the same new job. Then job.retried on the old job's `.ops` links it to the new one, naming the
 * operator (appended again only if the old job's view does not show the link yet).
 */
export async function retryJob(
  deps: RetryDeps,
  input: { readonly clientId: string; readonly jobId: string; readonly by: Actor },
): Promise<RetryOutcome> {
  const found = await readJob(deps.jsm, input.clientId, input.jobId);
  if (found === undefined) return { kind: "unknown" };
  const decision = decideRetry(found.view, found.run, input.by);
  if (decision.kind === "refuse") return { kind: "not_retryable", status: decision.status };
  const { request } = decision;
  const newJobId = deps.deriveJobId(input.clientId, request.request_id);
  const event: RunRequested = {
    id: deps.ids.next("evt"),
    type: "run.requested",
    schema_version: 1,
    job_id: newJobId,
    client_id: input.clientId,
    occurred_at: deps.clock.now().toISOString(),
    data: {
      request_id: request.request_id,
      route: request.route,
      input: request.input,
      ...(request.metadata === undefined ? {} : { metadata: request.metadata }),
      ...(request.callback_url === undefined ? {} : { callback_url: request.callback_url }),
      fingerprint: request.fingerprint,
      retry_of: request.retry_of,
      requested_by: request.requested_by,
    },
  };
  const appended = await appendEvent(deps.js, event, {
    msgId: newJobId,
    expectedLastSubjectSeq: 0,
  });
  let created = appended.kind === "appended";
  let job = evolve(null, event) as JobView;
  if (!created) {
    const existing = await readJob(deps.jsm, input.clientId, newJobId);
    if (existing === undefined) return { kind: "unknown" };
    if (existing.run.data.fingerprint !== request.fingerprint) return { kind: "conflict" };
    job = existing.view;
    created = false;
  }
  if (found.view.retried_as !== newJobId) {
    await appendEvent(
      deps.js,
      {
        id: deps.ids.next("evt"),
        type: "job.retried",
        schema_version: 1,
        job_id: input.jobId,
        client_id: input.clientId,
        occurred_at: deps.clock.now().toISOString(),
        data: { retry_job_id: newJobId, requested_by: input.by },
      },
      { msgId: `retried:${input.jobId}:${newJobId}` },
    );
  }
  return { kind: "retried", created, job };
}
