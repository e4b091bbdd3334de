import type { EventData, RunRequested } from "./events.ts";
import { canMove } from "./evolve.ts";
import {
  isFinal,
  type JobStatus,
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
  const deadlineAt = Date.parse(input.run.occurred_at) + route.deadlineMs;
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
