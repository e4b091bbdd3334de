import type { JobEvent } from "./events.ts";
import { isFinal, type JobStatus, type JobView } from "./job.ts";

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
          ...(data.callback_url === undefined
            ? {}
            : { callback: { status: "pending", attempts: 0 } as const }),
        },
      };
    }
    case "job.dispatched":
      return moveTo(state, event, "dispatched");
    case "job.running":
      return moveTo(state, event, "running");
    case "job.done":
      return moveTo(state, event, "done", { output: event.data.output });
    case "job.error":
      return moveTo(state, event, "error", { error: { ...event.data } });
    case "job.rejected":
      return moveTo(state, event, "rejected", { error: { ...event.data } });
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
      return withCallback(state, (view) => ({
        callback: {
          status: "delivered",
          attempts: Math.max(view.callback?.attempts ?? 0, event.data.attempts),
          ...(view.callback?.last_attempt_at === undefined
            ? {}
            : { last_attempt_at: view.callback.last_attempt_at }),
        },
      }));
    case "callback.failed":
      return withCallback(state, (view) => ({
        callback: {
          status: "failed",
          attempts: Math.max(view.callback?.attempts ?? 0, event.data.attempts),
          ...(view.callback?.last_attempt_at === undefined
            ? {}
            : { last_attempt_at: view.callback.last_attempt_at }),
        },
      }));
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
