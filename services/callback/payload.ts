import type { FinalEvent, JobErrorInfo, JobStatus, RunSummary } from "../../shared/domain/index.ts";
import { type EventStoreDeps, readLastEvent } from "../../shared/jobs/index.ts";
import type { FinalJobStatus, JobCompletedEvent } from "../../shared/webhooks/index.ts";

/** Largest callback body sent; receivers commonly cap webhook bodies near 20 kB. */
export const MAX_CALLBACK_BODY_BYTES = 16_384;

const bytes = (text: string) => Buffer.byteLength(text, "utf8");

/** The webhook-id of a job's callback: derived from the job id, so every retry and redelivery repeats it. */
export function webhookIdFor(jobId: string): string {
  return `msg_${jobId}`;
}

/** A string output cut (on a character boundary) so the whole body fits in `limit` bytes. */
function cutToFit(event: JobCompletedEvent, output: string, limit: number): string | undefined {
  let lo = 0;
  let hi = output.length;
  let best: string | undefined;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    let candidate = output.slice(0, mid);
    // Never split a surrogate pair: a lone surrogate would be sent as U+FFFD.
    if (/[\uD800-\uDBFF]$/.test(candidate)) candidate = candidate.slice(0, -1);
    const body = JSON.stringify({ ...event, data: { ...event.data, output: candidate } });
    if (bytes(body) <= limit) {
      best = candidate;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return best;
}

/** What a completion callback says about a job: a final view, or a final event with its run summary. */
export interface CompletedJob {
  readonly job_id: string;
  readonly client_id: string;
  readonly request_id: string;
  readonly route: string;
  readonly status: JobStatus;
  readonly output?: unknown;
  readonly error?: JobErrorInfo;
  readonly created_at: string;
  readonly completed_at?: string;
  readonly updated_at?: string;
}

/** The completed job a final event describes, with the run summary it (or `.run`) carries. */
export function completedJobOf(event: FinalEvent, run: RunSummary): CompletedJob {
  const base = {
    job_id: event.job_id,
    client_id: event.client_id,
    request_id: run.request_id,
    route: run.route,
    created_at: run.created_at,
    completed_at: event.occurred_at,
  };
  switch (event.type) {
    case "job.done":
      return { ...base, status: "done", output: event.data.output };
    case "job.error":
    case "job.rejected":
      return {
        ...base,
        status: event.type === "job.error" ? "error" : "rejected",
        error: { code: event.data.code, message: event.data.message },
      };
    default: {
      const unreachable: never = event;
      return unreachable;
    }
  }
}

/**
 * The exact JSON body of a job's completion callback. `timestamp` is the completion time, so the
 * body is byte-identical on every retry. An output that does not fit in `limit` bytes is cut (a
 * string) or left out (anything else) and `truncated: true` is set; the caller reads the full
 * record with GET /jobs/{job_id}.
 */
export function buildCallbackBody(view: CompletedJob, limit = MAX_CALLBACK_BODY_BYTES): string {
  const status = view.status as FinalJobStatus;
  const completedAt = view.completed_at ?? view.updated_at ?? view.created_at;
  const event: JobCompletedEvent = {
    type: "job.completed",
    timestamp: completedAt,
    data: {
      job_id: view.job_id,
      request_id: view.request_id,
      route: view.route,
      status,
      ...(status === "done" ? { output: view.output ?? null } : {}),
      ...(status !== "done" && view.error ? { error: { ...view.error } } : {}),
      created_at: view.created_at,
      completed_at: completedAt,
    },
  };
  const full = JSON.stringify(event);
  if (bytes(full) <= limit || status !== "done") return full;
  const marked: JobCompletedEvent = { ...event, data: { ...event.data, truncated: true } };
  const { output: _dropped, ...withoutOutput } = marked.data;
  const cut = typeof view.output === "string" ? cutToFit(marked, view.output, limit) : undefined;
  return JSON.stringify(
    cut === undefined
      ? { ...marked, data: withoutOutput }
      : { ...marked, data: { ...marked.data, output: cut } },
  );
}

/** The run summary of a final event: carried by it, or (0.1 events, reports) read from `.run`. */
export async function runSummaryOf(
  store: EventStoreDeps,
  event: FinalEvent,
): Promise<RunSummary | undefined> {
  if (event.data.run !== undefined) return event.data.run;
  const run = await readLastEvent(store, event, "run");
  if (run?.event.type !== "run.requested") return undefined;
  const { data } = run.event;
  return {
    request_id: data.request_id,
    route: data.route,
    created_at: run.event.occurred_at,
    ...(data.callback_url === undefined ? {} : { callback_url: data.callback_url }),
  };
}
