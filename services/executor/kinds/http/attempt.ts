import { parseDuration } from "../../../../shared/config/index.ts";
import type { DispatchIndex } from "../../../../shared/dispatch/index.ts";
import { deadlineExceeded, type StatusIntent } from "../../../../shared/domain/index.ts";
import {
  type CurrentStatus,
  statusAfterWrite,
  type WriteResult,
} from "../../../../shared/jobs/index.ts";
import type { Logger } from "../../../../shared/log/index.ts";
import { NO_TRACING, type TraceSpan } from "../../../../shared/telemetry/index.ts";
import type { Task } from "../../../../shared/worker/index.ts";
import type { JobContext } from "../../job-writer.ts";
import { ExecutorStoppingError, type KindContext, type RouteOf } from "../kind.ts";
import { type HttpOutcome, postTask } from "./post.ts";

/** One HTTP job, wherever its attempt comes from (the admission or the route's queue). */
export interface HttpJob {
  readonly context: JobContext;
  readonly route: RouteOf<"http">;
  readonly task: Task;
  readonly deadlineAt: number;
  /** Keeps the message that holds the job alive during the POST. */
  readonly keepAlive: () => void;
  readonly log: Logger;
  /** The admission's dispatch span, when the attempt is made from it (tracing on). */
  readonly dispatchSpan?: string | undefined;
}

/** How an attempt left the job: nothing more to do here, or a retry after `delayMs`. */
export type AttemptEnd =
  | { readonly kind: "settled" }
  | { readonly kind: "retry"; readonly delayMs: number; readonly known: CurrentStatus };

export interface AttemptDeps {
  readonly ctx: KindContext;
  readonly index: DispatchIndex;
  /** Aborted when the executor stops. */
  readonly signal: AbortSignal;
}

const ONE_MINUTE = 60_000;

const error = (code: string, message: string): StatusIntent => ({
  type: "job.error",
  data: { code, message },
});

/**
 * Makes attempt `attempt` of an HTTP job and records what it came to, each outcome as one status
 * event (docs/executors.md): 2xx → job.done, 202 → job.dispatched (the executor reports later; a
 * deadline timer is set), other 4xx → job.rejected, a bad answer → job.error, and a retryable
 * failure → job.attempt_failed with the time of the next attempt (or job.error
 * executor_unavailable after max_attempts). A first attempt that succeeds writes nothing before
 * the POST: the whole job is run.requested + job.done.
 */
export async function attemptHttp(
  deps: AttemptDeps,
  input: { readonly job: HttpJob; readonly attempt: number; readonly known: CurrentStatus },
): Promise<AttemptEnd> {
  const { ctx } = deps;
  const { job, attempt, known } = input;
  const executor = job.route.executor;
  const write = (intent: StatusIntent, at: CurrentStatus = known) =>
    ctx.writer.write(job.context, intent, { known: at });
  const remainingMs = job.deadlineAt - ctx.clock.now().getTime();
  if (remainingMs <= 0) {
    await write(deadlineExceeded("the job passed its deadline"));
    return { kind: "settled" };
  }
  if (attempt > executor.max_attempts) {
    await write(
      error("executor_unavailable", `the executor failed ${executor.max_attempts} attempts`),
    );
    return { kind: "settled" };
  }
  let task: Task;
  try {
    task = await ctx.tasks.withTools(job.task);
  } catch {
    await write({
      type: "job.rejected",
      data: { code: "tool_set_unknown", message: "The route's tool set is not published." },
    });
    return { kind: "settled" };
  }
  // A cancel aborts the POST in flight; the job is final then, and nothing more is recorded.
  const cancel = ctx.cancels.track(job.task.job_id);
  const outcome = await post(deps, {
    job: { ...job, task },
    attempt,
    remainingMs,
    cancel: cancel.signal,
  }).finally(cancel.release);
  if (cancel.signal.aborted) return { kind: "settled" };
  job.log.info({ attempt, outcome: outcome.kind }, "task sent");
  return settle(deps, { job, attempt, known, outcome, write });
}

async function post(
  deps: AttemptDeps,
  input: {
    readonly job: HttpJob;
    readonly attempt: number;
    readonly remainingMs: number;
    readonly cancel: AbortSignal;
  },
): Promise<HttpOutcome> {
  const { job } = input;
  const executor = job.route.executor;
  const keepAlive = setInterval(job.keepAlive, 1_000);
  deps.ctx.metrics?.executorInFlight.inc({ route: job.route.key });
  const span = (deps.ctx.tracing ?? NO_TRACING).start("execute http", {
    parent: job.dispatchSpan ?? job.context.traceparent,
    kind: "client",
    attributes: {
      job_id: job.task.job_id,
      client_id: job.task.client_id,
      route: job.route.key,
      attempt: input.attempt,
    },
  });
  try {
    const outcome = await postTask({
      url: executor.url,
      secret: executor.secret,
      task: job.task,
      attempt: input.attempt,
      timeoutMs: Math.min(parseDuration(executor.timeout), input.remainingMs),
      maxResponseBytes: executor.max_response_bytes,
      clock: deps.ctx.clock,
      signal: AbortSignal.any([deps.signal, input.cancel]),
      ...traceHeader(span.traceparent ?? job.context.traceparent),
    });
    if (deps.signal.aborted) throw new ExecutorStoppingError();
    endAttemptSpan(span, outcome);
    return outcome;
  } catch (err) {
    span.end(err);
    throw err;
  } finally {
    clearInterval(keepAlive);
    deps.ctx.metrics?.executorInFlight.dec({ route: job.route.key });
  }
}

const traceHeader = (traceparent: string | undefined) => (traceparent ? { traceparent } : {});

/** An attempt's span says what the POST came to; anything but done or accepted is an error. */
function endAttemptSpan(span: TraceSpan, outcome: HttpOutcome): void {
  const status =
    outcome.kind === "accepted" ? 202 : "status" in outcome ? outcome.status : undefined;
  span.set({ outcome: outcome.kind, "http.response.status_code": status });
  span.end(outcome.kind === "done" || outcome.kind === "accepted" ? undefined : outcome.kind);
}

function backoffMs(job: HttpJob, attempt: number): number {
  const backoff = job.route.executor.retry_backoff;
  const entry = backoff[Math.min(attempt - 1, backoff.length - 1)];
  return entry === undefined ? ONE_MINUTE : parseDuration(entry);
}

async function settle(
  deps: AttemptDeps,
  input: {
    readonly job: HttpJob;
    readonly attempt: number;
    readonly known: CurrentStatus;
    readonly outcome: HttpOutcome;
    readonly write: (intent: StatusIntent, at?: CurrentStatus) => Promise<WriteResult>;
  },
): Promise<AttemptEnd> {
  const { attempt, outcome, write } = input;
  const attempts = attempt > 1 ? { attempts: attempt } : {};
  switch (outcome.kind) {
    case "done":
      await write({ type: "job.done", data: { output: outcome.output, ...attempts } });
      return { kind: "settled" };
    case "refused":
      await write({
        type: "job.rejected",
        data: {
          code: "executor_refused",
          message: `the executor answered ${outcome.status}`,
          ...attempts,
        },
      });
      return { kind: "settled" };
    case "bad_response":
      await write({
        type: "job.error",
        data: { code: "executor_bad_response", message: outcome.reason, ...attempts },
      });
      return { kind: "settled" };
    case "too_large":
      await write({
        type: "job.error",
        data: {
          code: "executor_response_too_large",
          message: `the executor's answer is larger than ${outcome.limitBytes} bytes (routes[].executor.max_response_bytes)`,
          ...attempts,
        },
      });
      return { kind: "settled" };
    case "accepted":
      await accepted(deps, input);
      return { kind: "settled" };
    case "retry":
      return retry(deps, { ...input, outcome });
    default: {
      const unreachable: never = outcome;
      return unreachable;
    }
  }
}

/** 202: the executor reports later through the report endpoint; the deadline is a timer. */
async function accepted(
  deps: AttemptDeps,
  input: {
    readonly job: HttpJob;
    readonly attempt: number;
    readonly write: (intent: StatusIntent) => Promise<WriteResult>;
  },
): Promise<void> {
  const { job } = input;
  // The record first: the executor may report before this process has written anything else.
  await deps.index.put(job.task.job_id, {
    client_id: job.task.client_id,
    route: job.route.key,
    attempt: input.attempt,
    phase: "accepted",
  });
  const dispatched = await input.write({
    type: "job.dispatched",
    data: { target: "http", attempt: input.attempt },
  });
  if (dispatched.kind !== "appended") return;
  await deps.ctx.deadlines.schedule({
    job: job.context,
    dueAt: job.deadlineAt,
    deadlineMs: parseDuration(job.route.deadline),
    expectedSeq: dispatched.seq,
  });
}

async function retry(
  deps: AttemptDeps,
  input: {
    readonly job: HttpJob;
    readonly attempt: number;
    readonly outcome: Extract<HttpOutcome, { kind: "retry" }>;
    readonly write: (intent: StatusIntent) => Promise<WriteResult>;
  },
): Promise<AttemptEnd> {
  const { job, attempt, outcome } = input;
  if (attempt >= job.route.executor.max_attempts) {
    await input.write(
      error(
        "executor_unavailable",
        `the executor failed ${attempt} attempts (last: ${outcome.reason})`,
      ),
    );
    return { kind: "settled" };
  }
  const delayMs = Math.max(backoffMs(job, attempt), outcome.retryAfterMs ?? 0);
  const failed = await input.write({
    type: "job.attempt_failed",
    data: {
      target: "http",
      attempt,
      reason: outcome.reason,
      ...(outcome.status === undefined ? {} : { status_code: outcome.status }),
      next_attempt_at: new Date(deps.ctx.clock.now().getTime() + delayMs).toISOString(),
    },
  });
  if (failed.kind !== "appended") return { kind: "settled" };
  return { kind: "retry", delayMs, known: statusAfterWrite(failed) };
}
