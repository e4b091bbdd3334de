import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { Clock } from "../clock/index.ts";
import { evolve, isFinal } from "../domain/index.ts";
import type { IdGenerator } from "../ids/index.ts";
import { JOB_ID_PATTERN } from "../ids/index.ts";
import {
  appendEvent,
  type EventLayout,
  findJobClient,
  newEvent,
  readLastEvent,
  readLastJobEvent,
} from "../jobs/index.ts";
import { publishCallbackWakeup } from "../schedule/index.ts";

export interface RedeliveryDeps {
  readonly js: JetStreamClient;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
  readonly jsm: JetStreamManager;
  readonly clock: Clock;
  readonly ids: IdGenerator;
}

export interface RedeliveryOptions {
  /** The job's client; looked up from the stream when omitted. */
  readonly clientId?: string;
  /** Who asked (recorded in the event for the audit trail). */
  readonly requestedBy?: string;
}

/** Why a redelivery was not requested. */
export type RedeliveryRefusal = "unknown_job" | "no_callback" | "not_final" | "in_progress";

export type RedeliveryResult =
  | { readonly kind: "requested"; readonly clientId: string; readonly seq: number }
  | { readonly kind: "refused"; readonly reason: RedeliveryRefusal; readonly message: string };

const refused = (reason: RedeliveryRefusal, message: string): RedeliveryResult => ({
  kind: "refused",
  reason,
  message,
});

/**
 * Asks the callback service to send a job's callback again: appends callback.redelivery_requested
 * to the job's `.cb` subject, expecting the settled (delivered or failed) event to be the last one,
 * then puts a wake-up for it in the SWITCHYARD_CALLBACKS queue. The callback service delivers it
 * as a new delivery with its own retry schedule and the same webhook-id. A pending callback is
 * refused: it is still retrying. Asking again while a request is not yet served re-queues it
 * (the request is not appended twice), so a command that failed half-way can simply be repeated.
 */
export async function requestRedelivery(
  deps: RedeliveryDeps,
  jobId: string,
  options: RedeliveryOptions = {},
): Promise<RedeliveryResult> {
  if (!JOB_ID_PATTERN.test(jobId)) return refused("unknown_job", `'${jobId}' is not a job id`);
  const clientId = options.clientId ?? (await findJobClient(deps, jobId));
  if (!clientId) return refused("unknown_job", `no job ${jobId}`);
  const ref = { client_id: clientId, job_id: jobId };
  const run = await readLastEvent(deps, ref, "run");
  if (run?.event.type !== "run.requested") return refused("unknown_job", `no job ${jobId}`);
  if (run.event.data.callback_url === undefined) {
    return refused("no_callback", `job ${jobId} was submitted without a callback_url`);
  }
  const [job, cb] = await Promise.all([
    readLastJobEvent(deps, ref),
    readLastEvent(deps, ref, "cb"),
  ]);
  let state = evolve(null, run.event);
  if (job) state = evolve(state, job.event);
  if (!job || !state || !isFinal(state.status)) {
    return refused("not_final", `job ${jobId} is ${state?.status ?? "unknown"}; no callback yet`);
  }
  const queue = (seq: number, baseAttempts: number) =>
    publishCallbackWakeup(deps.js, {
      client_id: clientId,
      job_id: jobId,
      final_seq: job.seq,
      due_at: deps.clock.now().toISOString(),
      trigger: { kind: "redelivery", seq, baseAttempts },
      deferrals: 0,
    });
  if (cb?.event.type === "callback.redelivery_requested") {
    await queue(cb.seq, cb.event.data.attempts);
    return { kind: "requested", clientId, seq: cb.seq };
  }
  if (cb) state = evolve(state, cb.event);
  const callback = state?.callback;
  if (!cb || !callback || callback.status === "pending") {
    return refused(
      "in_progress",
      `the callback of job ${jobId} is still pending (${callback?.attempts ?? 0} attempts so far); retries continue on their own`,
    );
  }
  const event = newEvent(deps, ref, {
    type: "callback.redelivery_requested",
    data: {
      attempts: callback.attempts,
      ...(options.requestedBy === undefined
        ? {}
        : { requested_by: options.requestedBy.slice(0, 128) }),
    },
  });
  const result = await appendEvent(deps, event, { expectedLastSubjectSeq: cb.seq });
  if (result.kind === "conflict") {
    return refused("in_progress", `the callback of job ${jobId} changed meanwhile; try again`);
  }
  await queue(result.seq, callback.attempts);
  return { kind: "requested", clientId, seq: result.seq };
}
