import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { Clock } from "../../shared/clock/index.ts";
import {
  isFinalEventType,
  type RunRequested,
  type RunSummary,
  type StatusIntent,
} from "../../shared/domain/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import {
  type CurrentStatus,
  type EventLayout,
  type JobRef,
  type WriteResult,
  writeStatus,
} from "../../shared/jobs/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { recordTransition } from "./observe.ts";

/** A job as the executor's writers know it: its subjects, route, and what its callback needs. */
export interface JobContext {
  readonly ref: JobRef;
  readonly route: string;
  /** The run.requested time (deadline timers carry it on). */
  readonly createdAt: string;
  /** Carried by the final event so the callback service reads nothing; absent for 0.1 tasks. */
  readonly summary?: RunSummary;
  readonly traceparent?: string;
}

/** The job context of a run.requested event. */
export function jobContextOf(run: RunRequested, traceparent?: string): JobContext {
  return {
    ref: { client_id: run.client_id, job_id: run.job_id },
    route: run.data.route,
    createdAt: run.occurred_at,
    summary: runSummaryOf(run),
    ...(traceparent ? { traceparent } : {}),
  };
}

/** What the completion callback needs of a run. */
export function runSummaryOf(run: RunRequested): RunSummary {
  return {
    request_id: run.data.request_id,
    route: run.data.route,
    created_at: run.occurred_at,
    ...(run.data.callback_url === undefined ? {} : { callback_url: run.data.callback_url }),
  };
}

export interface JobWriter {
  /**
   * Appends a status event for the job (decided by the domain against what is known or read),
   * adding the run summary to final events, and counts it.
   */
  write(
    job: JobContext,
    intent: StatusIntent,
    options?: { readonly known?: CurrentStatus; readonly onlyIfUnchanged?: boolean },
  ): Promise<WriteResult>;
}

export interface JobWriterDeps {
  readonly js: JetStreamClient;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
  readonly jsm: JetStreamManager;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly metrics?: HubMetrics;
}

/** The executor's status writer: every kind, the admission and the deadline timers use it. */
export function createJobWriter(deps: JobWriterDeps): JobWriter {
  const withSummary = (job: JobContext, intent: StatusIntent): StatusIntent =>
    isFinalEventType(intent.type) && job.summary !== undefined
      ? ({ ...intent, data: { ...intent.data, run: job.summary } } as StatusIntent)
      : intent;
  return {
    async write(job, intent, options = {}) {
      const result = await writeStatus(deps, {
        ref: job.ref,
        intent: withSummary(job, intent),
        ...(options.known ? { known: options.known } : {}),
        ...(options.onlyIfUnchanged ? { onlyIfUnchanged: true } : {}),
        ...(job.traceparent ? { traceparent: job.traceparent } : {}),
      });
      if (result.kind === "appended") {
        recordTransition(deps.metrics, job.route, result.event);
      }
      return result;
    },
  };
}
