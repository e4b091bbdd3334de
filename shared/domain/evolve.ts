import type { CallbackDelivered, CallbackFailed, JobEvent } from "./events.ts";
import {
  type CallbackView,
  isFinal,
  type JobStatus,
  type JobView,
  type StatusEvent,
  statusAfter,
} from "./job.ts";

export type JobState = JobView | null;

/** Why an event left the state unchanged. Kept in the stream, logged, never applied. */
export type IgnoredReason =
  | "unknown_job"
  | "duplicate_request"
  | "job_final"
  | "illegal_transition"
  | "no_callback_pending";

export type Transition =
  | { readonly applied: true; readonly state: JobView }
  | { readonly applied: false; readonly state: JobState; readonly reason: IgnoredReason };

/**
 * Legal status moves. done, error and rejected are final. `running` may be reported without a
 * prior `dispatched` (builtin and NATS workers start at once), and an executor may refuse a task
 * it was handed (dispatched → rejected).
 */
const NEXT: Readonly<Record<JobStatus, ReadonlySet<JobStatus>>> = {
  queued: new Set(["dispatched", "running", "done", "error", "rejected"]),
  dispatched: new Set(["dispatched", "running", "done", "error", "rejected"]),
  running: new Set(["running", "done", "error"]),
  done: new Set(),
  error: new Set(),
  rejected: new Set(),
};

/** True when `from → to` is a legal move of the status machine. */
export function canMove(from: JobStatus, to: JobStatus): boolean {
  return NEXT[from].has(to);
}

function moveTo(
  state: JobState,
  event: JobEvent,
  status: JobStatus,
  patch: Partial<JobView> = {},
): Transition {
  if (state === null) return { applied: false, state, reason: "unknown_job" };
  if (isFinal(state.status)) return { applied: false, state, reason: "job_final" };
  if (!canMove(state.status, status)) {
    return { applied: false, state, reason: "illegal_transition" };
  }
  const completed = isFinal(status) ? { completed_at: event.occurred_at } : {};
  return {
    applied: true,
    state: { ...state, ...patch, ...completed, status, updated_at: event.occurred_at },
  };
}

/** What a status event adds to the view besides the status: the output or the error. */
function outcomeOf(event: StatusEvent): Partial<JobView> {
  switch (event.type) {
    case "job.done":
      return { output: event.data.output };
    case "job.error": {
      // Only the error itself: the run summary and attempt count are for the callback service.
      const { code, message, cancelled_by } = event.data;
      return { error: { code, message, ...(cancelled_by === undefined ? {} : { cancelled_by }) } };
    }
    case "job.rejected":
      return { error: { code: event.data.code, message: event.data.message } };
    default:
      return {};
  }
}

/**
 * The callback member after a settling event. Since 0.2 a settling event records the attempt that
 * settled it (status_code / duration_ms), so it is also the last attempt; 0.1 recorded that attempt
 * in a callback.attempted event before it.
 */
function settledCallback(view: JobView, event: CallbackDelivered | CallbackFailed): CallbackView {
  const recordsAttempt =
    event.data.status_code !== undefined || event.data.duration_ms !== undefined;
  const lastAttemptAt = recordsAttempt ? event.occurred_at : view.callback?.last_attempt_at;
  return {
    status: event.type === "callback.delivered" ? "delivered" : "failed",
    attempts: Math.max(view.callback?.attempts ?? 0, event.data.attempts),
    ...(lastAttemptAt === undefined ? {} : { last_attempt_at: lastAttemptAt }),
  };
}

function withCallback(state: JobState, patch: (view: JobView) => Partial<JobView>): Transition {
  if (state === null) return { applied: false, state, reason: "unknown_job" };
  if (state.callback === undefined || state.callback.status !== "pending") {
    return { applied: false, state, reason: "no_callback_pending" };
  }
  return { applied: true, state: { ...state, ...patch(state) } };
}

/**
 * Applies one event to a job's state and says whether it changed anything. Pure: no clock, no I/O.
 * The projector, the read-your-writes fallback and `audit verify` all fold events through this.
 */
export function transition(state: JobState, event: JobEvent): Transition {
  switch (event.type) {
    case "run.requested": {
      if (state !== null) return { applied: false, state, reason: "duplicate_request" };
      const { data } = event;
      return {
        applied: true,
        state: {
          job_id: event.job_id,
          client_id: event.client_id,
          request_id: data.request_id,
          route: data.route,
          status: "queued",
          created_at: event.occurred_at,
          updated_at: event.occurred_at,
          fingerprint: data.fingerprint,
          seq: 0,
          ...(data.retry_of === undefined ? {} : { retry_of: data.retry_of }),
          ...(data.callback_url === undefined
            ? {}
            : { callback: { status: "pending", attempts: 0 } as const }),
        },
      };
    }
    case "job.dispatched":
    case "job.attempt_failed":
    case "job.running":
    case "job.done":
    case "job.error":
    case "job.rejected":
      return moveTo(state, event, statusAfter(event.type), outcomeOf(event));
    case "callback.attempted":
      return withCallback(state, (view) => ({
        callback: {
          status: "pending",
          attempts: Math.max(view.callback?.attempts ?? 0, event.data.attempt),
          last_attempt_at: event.occurred_at,
          ...(event.data.next_attempt_at === undefined
            ? {}
            : { next_attempt_at: event.data.next_attempt_at }),
        },
      }));
    case "callback.delivered":
    case "callback.failed":
      return withCallback(state, (view) => ({ callback: settledCallback(view, event) }));
    case "callback.redelivery_requested": {
      // Only a settled callback can be sent again; a pending one is still being retried.
      if (state === null) return { applied: false, state, reason: "unknown_job" };
      if (state.callback === undefined) {
        return { applied: false, state, reason: "no_callback_pending" };
      }
      if (state.callback.status === "pending") {
        return { applied: false, state, reason: "illegal_transition" };
      }
      const { last_attempt_at } = state.callback;
      return {
        applied: true,
        state: {
          ...state,
          callback: {
            status: "pending",
            attempts: state.callback.attempts,
            ...(last_attempt_at === undefined ? {} : { last_attempt_at }),
          },
        },
      };
    }
    case "job.retried":
      if (state === null) return { applied: false, state, reason: "unknown_job" };
      return { applied: true, state: { ...state, retried_as: event.data.retry_job_id } };
    case "job.result_discarded":
      // History only: the result came after the job was final (cancelled).
      return { applied: false, state, reason: state === null ? "unknown_job" : "job_final" };
    default: {
      const unreachable: never = event;
      return unreachable;
    }
  }
}

/** `evolve(state, event)`: the new state, or the same state when the event is ignored. */
export function evolve(state: JobState, event: JobEvent): JobState {
  return transition(state, event).state;
}

/** Folds a job's events, in stream order, from the empty state. */
export function replay(events: Iterable<JobEvent>): JobState {
  let state: JobState = null;
  for (const event of events) state = evolve(state, event);
  return state;
}
