import { parseIsoMs } from "../clock/index.ts";
import type { Actor, EventData, JobEvent, RunRequested } from "./events.ts";
import { canMove } from "./evolve.ts";
import { requestFingerprint } from "./fingerprint.ts";
import {
  isFinal,
  type JobStatus,
  type JobView,
  type StatusEvent,
  type StatusEventType,
  statusAfter,
} from "./job.ts";

/** A status event a writer wants to append, before the envelope (id, time, job) is added. */
export type StatusIntent = {
  [T in StatusEventType]: { readonly type: T; readonly data: EventData<T> };
}[StatusEventType];

/** Why a status event may not be appended. */
export type StatusRefusal = "job_final" | "illegal_transition";

export type StatusDecision =
  | { readonly kind: "append"; readonly intent: StatusIntent }
  | { readonly kind: "refuse"; readonly reason: StatusRefusal };

/**
 * decide(command, state) for status events: may `intent` be appended to a job whose status is
 * `status`? The one place that says "final or cannot move": every status writer (executor kinds,
 * workers, executor reports, deadline timers) asks this instead of deciding for itself, and
 * `evolve` applies the same table when it folds.
 */
export function decideStatus(status: JobStatus, intent: StatusIntent): StatusDecision {
  if (isFinal(status)) return { kind: "refuse", reason: "job_final" };
  if (!canMove(status, statusAfter(intent.type))) {
    return { kind: "refuse", reason: "illegal_transition" };
  }
  return { kind: "append", intent };
}

/** The status an appended status event leaves a job in. */
export function statusOfEvent(event: StatusEvent): JobStatus {
  return statusAfter(event.type);
}

/** job.error deadline_exceeded, with a message that says where the job was. */
export function deadlineExceeded(message: string): StatusIntent {
  return { type: "job.error", data: { code: "deadline_exceeded", message } };
}

/** What admission knows of the run's route. */
export interface RouteFacts {
  readonly enabled: boolean;
  readonly maxInputBytes: number;
  readonly deadlineMs: number;
}

export type Admission =
  /** Refused before it ran: job.rejected, or job.error when the deadline passed while queued. */
  | { readonly kind: "end"; readonly intent: StatusIntent }
  | { readonly kind: "admit"; readonly deadlineAt: number };

/**
 * decide(admit, run): whether a run may be handed to its route's executor. Refusals are
 * route_unknown, route_disabled, input_too_large (UTF-8 bytes) and deadline_exceeded (the run
 * waited in the stream past its deadline). Pure: `inputBytes` and `now` come from the caller.
 */
export function decideAdmission(input: {
  readonly run: RunRequested;
  readonly route: RouteFacts | undefined;
  readonly inputBytes: number;
  readonly now: number;
}): Admission {
  const { route } = input;
  const rejected = (code: string, message: string): Admission => ({
    kind: "end",
    intent: { type: "job.rejected", data: { code, message } },
  });
  if (route === undefined) return rejected("route_unknown", "The route is not configured.");
  if (!route.enabled) return rejected("route_disabled", "The route is disabled.");
  if (input.inputBytes > route.maxInputBytes) {
    return rejected(
      "input_too_large",
      `input exceeds the route's limit of ${route.maxInputBytes} bytes`,
    );
  }
  const deadlineAt = parseIsoMs(input.run.occurred_at) + route.deadlineMs;
  if (input.now >= deadlineAt) {
    return { kind: "end", intent: deadlineExceeded("the job passed its deadline while queued") };
  }
  return { kind: "admit", deadlineAt };
}

/** What an executor (HTTP report, NATS worker) says happened to a job. */
export type ExecutorReport =
  | { readonly type: "running" }
  | { readonly type: "done"; readonly output: unknown }
  | {
      readonly type: "error" | "rejected";
      readonly error: { readonly code: string; readonly message: string };
    };

/** The status event an executor's report asks for (decideStatus then says whether it may be). */
export function reportIntent(report: ExecutorReport): StatusIntent {
  switch (report.type) {
    case "running":
      return { type: "job.running", data: {} };
    case "done":
      return { type: "job.done", data: { output: report.output } };
    case "error":
      return { type: "job.error", data: { ...report.error } };
    case "rejected":
      return { type: "job.rejected", data: { ...report.error } };
    default: {
      const unreachable: never = report;
      return unreachable;
    }
  }
}

/** The error code of a cancelled job. */
export const CANCELLED = "cancelled";

/** The final event a cancel appends: job.error `cancelled`, naming who cancelled. */
export function cancelIntent(by: Actor): StatusIntent {
  return {
    type: "job.error",
    data: { code: CANCELLED, message: `cancelled by ${by.kind} ${by.id}`, cancelled_by: by },
  };
}

/** True for the event a cancel appended. */
export function isCancelEvent(event: JobEvent | undefined): boolean {
  return event?.type === "job.error" && event.data.code === CANCELLED;
}

export type CancelDecision =
  /** Not final: append the cancel (through writeStatus, which re-decides on a lost race). */
  | { readonly kind: "cancel"; readonly intent: StatusIntent }
  /** Cancelled before (by anyone): nothing to append; a repeat answers 200. */
  | { readonly kind: "already_cancelled" }
  /** Finished otherwise (done, error, rejected): 409 job_final. */
  | { readonly kind: "final"; readonly status: JobStatus };

/**
 * decide(cancel, job): what a cancel of a job in `state` does. The job must exist (the caller
 * answers 404 before asking). A cancel ends the job at once with job.error `cancelled`; telling
 * the executor to stop is best effort and comes after.
 */
export function decideCancel(state: JobView, by: Actor): CancelDecision {
  if (state.status === "error" && state.error?.code === CANCELLED) {
    return { kind: "already_cancelled" };
  }
  if (isFinal(state.status)) return { kind: "final", status: state.status };
  return { kind: "cancel", intent: cancelIntent(by) };
}

/** What is known of the run a job id already holds: its request_id and body fingerprint. */
export interface AcceptedRun {
  readonly request_id: string;
  readonly fingerprint: string;
}

export type ReplayDecision =
  /** The same request again: it is answered with the job it created (200). */
  | { readonly kind: "replay" }
  /** The job id's request_id was used with another body (409 request_id_conflict). */
  | { readonly kind: "conflict"; readonly request_id: string };

const REPLAY: ReplayDecision = { kind: "replay" };

/**
 * decide(run, job id taken): a run whose job id already holds a run (a stored view, or a `.run`
 * subject that was not empty) is a replay when its body has the same fingerprint, and a conflict
 * otherwise.
 */
export function decideReplay(accepted: AcceptedRun, fingerprint: string): ReplayDecision {
  if (accepted.fingerprint === fingerprint) return REPLAY;
  return { kind: "conflict", request_id: accepted.request_id };
}

/** The request_id of the retry of a job: derived from the old job, so a double click is one retry. */
export function retryRequestId(jobId: string): string {
  return `retry:${jobId}`;
}

/** The run a retry submits: the old run's route, input, metadata and callback_url. */
export interface RetryRequest {
  readonly request_id: string;
  readonly route: string;
  readonly input: string;
  readonly metadata?: Readonly<Record<string, unknown>>;
  readonly callback_url?: string;
  readonly retry_of: string;
  readonly requested_by: Actor;
  /** Over the request fields and retry_of: a second retry of the same job is a replay. */
  readonly fingerprint: string;
}

export type RetryDecision =
  | { readonly kind: "retry"; readonly request: RetryRequest }
  /** Only a job that ended in error or rejected can be retried. */
  | { readonly kind: "refuse"; readonly status: JobStatus };

/**
 * decide(retry, job): a job that ended in error or rejected is retried as a new job of the same
 * client, route and input, with a request_id derived from the old job; the hub's idempotency then
 * makes a repeated retry of the same job answer the retry that exists.
 */
export function decideRetry(state: JobView, run: RunRequested, by: Actor): RetryDecision {
  if (state.status !== "error" && state.status !== "rejected") {
    return { kind: "refuse", status: state.status };
  }
  const { data } = run;
  const body = {
    request_id: retryRequestId(run.job_id),
    route: data.route,
    input: data.input,
    ...(data.metadata === undefined ? {} : { metadata: data.metadata }),
    ...(data.callback_url === undefined ? {} : { callback_url: data.callback_url }),
    retry_of: run.job_id,
  };
  return {
    kind: "retry",
    request: { ...body, requested_by: by, fingerprint: requestFingerprint(body) },
  };
}

/** What a result refused because the job was cancelled leaves in the stream. */
export type DiscardedResult = EventData<"job.result_discarded">;

/**
 * decide(record, refused result): a final status event an executor wanted to append after the job
 * was cancelled is kept as history (job.result_discarded on `.ops`); anything else refused (a
 * duplicate after a crash, a deadline timer, a second cancel) leaves nothing. `last` is the job's
 * last status event.
 */
export function decideDiscardedResult(
  last: JobEvent | undefined,
  intent: StatusIntent,
): DiscardedResult | null {
  if (!isCancelEvent(last)) return null;
  switch (intent.type) {
    case "job.done":
      return { result_type: "job.done", output: intent.data.output, reason: "cancelled" };
    case "job.error":
    case "job.rejected": {
      const { code, message } = intent.data;
      // The hub's own endings are not an executor's result.
      if (code === CANCELLED || code === "deadline_exceeded") return null;
      return { result_type: intent.type, error: { code, message }, reason: "cancelled" };
    }
    default:
      return null;
  }
}
