import { type JobEvent, type JobView, toJobResource } from "../../shared/domain/index.ts";
import type { HistoryEntry } from "../../shared/jobs/index.ts";

/** Marks where a payload was left out for an operator without read_payloads. */
export const REDACTED = { redacted: true } as const;

/** A job as the operator API shows it: the client's record plus whose it is. */
export function adminJob(view: JobView, readPayloads: boolean) {
  const record = toJobResource(view);
  if (readPayloads || record.output === undefined) return { client_id: view.client_id, ...record };
  return { client_id: view.client_id, ...record, output: REDACTED };
}

/** An event's data with the run's input and any output left out unless payloads may be read. */
function eventData(event: JobEvent, readPayloads: boolean): unknown {
  if (readPayloads) return event.data;
  switch (event.type) {
    case "run.requested":
      return { ...event.data, input: REDACTED };
    case "job.done":
      return { ...event.data, output: REDACTED };
    case "job.result_discarded":
      return event.data.output === undefined ? event.data : { ...event.data, output: REDACTED };
    default:
      return event.data;
  }
}

/** One line of a job's timeline. */
export function timelineEntry(entry: HistoryEntry, readPayloads: boolean) {
  return {
    seq: entry.seq,
    time: entry.time,
    occurred_at: entry.event.occurred_at,
    type: entry.event.type,
    data: eventData(entry.event, readPayloads),
  };
}

/** Callback attempts from a job's `.cb` events: when, HTTP status, latency, outcome. */
export function callbackAttempts(history: readonly HistoryEntry[]) {
  const attempts: {
    attempt: number;
    at: string;
    outcome: string;
    status_code?: number;
    duration_ms?: number;
    error_class?: string;
    redelivery: boolean;
  }[] = [];
  for (const { event } of history) {
    if (
      event.type !== "callback.attempted" &&
      event.type !== "callback.delivered" &&
      event.type !== "callback.failed"
    ) {
      continue;
    }
    const d = event.data as {
      attempt?: number;
      attempts?: number;
      status_code?: number;
      duration_ms?: number;
      error_class?: string;
      redelivery_seq?: number;
    };
    // 0.1 recorded settling events without the attempt's figures: those are not attempts.
    if (event.type !== "callback.attempted" && d.duration_ms === undefined) continue;
    attempts.push({
      attempt: d.attempt ?? d.attempts ?? 0,
      at: event.occurred_at,
      outcome: event.type === "callback.attempted" ? "retry" : event.type.slice("callback.".length),
      ...(d.status_code === undefined ? {} : { status_code: d.status_code }),
      ...(d.duration_ms === undefined ? {} : { duration_ms: d.duration_ms }),
      ...(d.error_class === undefined ? {} : { error_class: d.error_class }),
      redelivery: d.redelivery_seq !== undefined,
    });
  }
  return attempts;
}
