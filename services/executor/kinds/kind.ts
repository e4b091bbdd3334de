import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Clock } from "../../../shared/clock/index.ts";
import type { RouteConfig } from "../../../shared/config/index.ts";
import type { RunRequested } from "../../../shared/domain/index.ts";
import type { IdGenerator } from "../../../shared/ids/index.ts";
import type { CurrentStatus, EventLayout } from "../../../shared/jobs/index.ts";
import type { Logger } from "../../../shared/log/index.ts";
import type { HubMetrics } from "../../../shared/metrics/index.ts";
import type { SpanKindName, Tracing } from "../../../shared/telemetry/index.ts";
import type { CancelSignals } from "../cancels.ts";
import type { DeadlineTimers } from "../deadlines.ts";
import type { JobContext, JobWriter } from "../job-writer.ts";
import type { Slots } from "../slots.ts";
import type { TaskBuilder } from "../task.ts";

/** The executor config of one kind, e.g. `ExecutorConfigOf<"http">`. */
export type ExecutorConfigOf<K extends RouteConfig["executor"]["kind"]> = Extract<
  RouteConfig["executor"],
  { kind: K }
>;

/** A route whose executor is of kind K. */
export type RouteOf<K extends RouteConfig["executor"]["kind"]> = RouteConfig & {
  readonly executor: ExecutorConfigOf<K>;
};

/** A run the admission let through, as a kind receives it. */
export interface AdmittedJob {
  readonly run: RunRequested;
  readonly route: RouteConfig;
  readonly context: JobContext;
  /** Epoch milliseconds after which the job errors with deadline_exceeded. */
  readonly deadlineAt: number;
  /** The job's status: queued on a first delivery, read from the stream on a redelivery. */
  readonly current: CurrentStatus;
  /** Tells JetStream the run.requested is still being worked on (long builtins, HTTP POSTs). */
  readonly keepAlive: () => void;
  readonly log: Logger;
  /** The admission's `dispatch` span: the parent of the kind's spans (undefined: not tracing). */
  readonly dispatchSpan?: string | undefined;
}

/** What every kind gets at start. */
export interface KindContext {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  /** Every configured route (a kind picks its own). */
  readonly routes: readonly RouteConfig[];
  readonly writer: JobWriter;
  readonly deadlines: DeadlineTimers;
  readonly tasks: TaskBuilder;
  /** The process-wide cap every kind draws from. */
  readonly slots: Slots;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly replicas: number;
  readonly metrics?: HubMetrics;
  /** Aborts a job's work in this process when the job is cancelled (cancels.ts). */
  readonly cancels: CancelSignals;
  /** An `execute` span per attempt or hand-over (docs/operations.md, "Traces"). */
  readonly tracing?: Tracing;
}

/**
 * How long a stopping executor lets work in flight run before it cuts it short: inside the
 * process's whole graceful stop (25 s), with room for the writes and acks after it.
 */
export const STOP_GRACE_MS = 15_000;

/**
 * Thrown by a kind's `run` when the process stops before the job's outcome is written (an HTTP
 * attempt past the stop's grace, a builtin sleep): the run is handed back at once (nak without a
 * delay), so another replica takes it instead of waiting out the ack wait.
 */
export class ExecutorStoppingError extends Error {
  readonly code = "executor_stopping";
  constructor() {
    super("the executor is stopping");
  }
}

/** A started kind. */
export interface KindRuntime {
  /**
   * Carries an admitted job as far as this process takes it: to its final event (builtins, an
   * HTTP answer), or to a durable hand-over (a work queue, a deadline timer). When it resolves,
   * the admission acks the run.requested; when it throws, the admission naks it for a retry (at
   * once for an {@link ExecutorStoppingError}).
   */
  run(job: AdmittedJob): Promise<void>;
  /** Stops pulling; in-flight work finishes or is left for redelivery. */
  stop(): Promise<void>;
}

/**
 * One executor kind: the single interface a new kind implements (docs/executors.md, "Adding an
 * executor kind"). The admission, deadlines and status rules are shared; a kind decides only how
 * a job of its routes runs.
 */
export interface ExecutorKind {
  /**
   * Trace each run as one span of this name, a child of the dispatch span (a kind that traces
   * finer steps itself, like HTTP attempts, leaves it out).
   */
  readonly runSpan?: { readonly name: string; readonly kind: SpanKindName };
  start(ctx: KindContext): Promise<KindRuntime>;
}
