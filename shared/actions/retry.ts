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
import {
  appendEvent,
  type EventLayout,
  type EventStoreDeps,
  type JobRef,
  newEvent,
  readLastEvent,
  readLastJobEvent,
  type StoredEvent,
} from "../jobs/index.ts";
import { acceptRun } from "./accept.ts";

export interface RetryDeps {
  readonly js: JetStreamClient;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
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

/** A job's view: its run with the last `.job` and `.ops` events folded on. */
function fold(run: RunRequested, later: readonly (StoredEvent | null)[]): JobView | undefined {
  let state: JobState = evolve(null, run);
  for (const stored of later) if (stored) state = evolve(state, stored.event);
  return state ?? undefined;
}

async function readJob(
  store: EventStoreDeps,
  ref: JobRef,
): Promise<{ run: RunRequested; view: JobView } | undefined> {
  const [run, job, ops] = await Promise.all([
    readLastEvent(store, ref, "run"),
    readLastJobEvent(store, ref),
    readLastEvent(store, ref, "ops"),
  ]);
  if (run?.event.type !== "run.requested") return undefined;
  const view = fold(run.event, [job, ops]);
  return view ? { run: run.event, view } : undefined;
}

/** The view of a job whose run was just read (a replayed retry): two reads, not three. */
async function viewAfter(
  store: EventStoreDeps,
  ref: JobRef,
  run: RunRequested,
): Promise<JobView | undefined> {
  const [job, ops] = await Promise.all([
    readLastJobEvent(store, ref),
    readLastEvent(store, ref, "ops"),
  ]);
  return fold(run, [job, ops]);
}

/**
 * Retries a job that ended in error or rejected (operator API): a new run.requested for the same
 * client, route and input, with `retry_of` and a request_id derived from the old job, accepted
 * exactly like POST /run (acceptRun), so a repeated retry finds the same new job. Then
 * job.retried on the old job's `.ops` links it to the new one, naming the operator (appended
 * again only if the old job's view does not show the link yet).
 */
export async function retryJob(
  deps: RetryDeps,
  input: { readonly clientId: string; readonly jobId: string; readonly by: Actor },
): Promise<RetryOutcome> {
  const old = { client_id: input.clientId, job_id: input.jobId };
  const found = await readJob(deps, old);
  if (found === undefined) return { kind: "unknown" };
  const decision = decideRetry(found.view, found.run, input.by);
  if (decision.kind === "refuse") return { kind: "not_retryable", status: decision.status };
  const { request } = decision;
  const ref = {
    client_id: input.clientId,
    job_id: deps.deriveJobId(input.clientId, request.request_id),
  };
  const outcome = await acceptRun(deps, {
    ref,
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
  });
  if (outcome.kind === "conflict") return { kind: "conflict" };
  if (outcome.kind === "unread") return { kind: "unknown" };
  const created = outcome.kind === "created";
  const job = created ? outcome.job : await viewAfter(deps, ref, outcome.run);
  if (job === undefined) return { kind: "unknown" };
  if (found.view.retried_as !== ref.job_id) {
    const linked = newEvent(deps, old, {
      type: "job.retried",
      data: { retry_job_id: ref.job_id, requested_by: input.by },
    });
    await appendEvent(deps, linked, { msgId: `retried:${input.jobId}:${ref.job_id}` });
  }
  return { kind: "retried", created, job };
}
