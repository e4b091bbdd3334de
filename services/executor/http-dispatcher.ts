import type { JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import type { Clock } from "../../shared/clock/index.ts";
import { parseDuration, type RouteConfig } from "../../shared/config/index.ts";
import type { DispatchIndex } from "../../shared/dispatch/index.ts";
import { canMove, isFinal, type JobStatus } from "../../shared/domain/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { traceIdOf } from "../../shared/trace/index.ts";
import {
  type CurrentStatus,
  decodeTask,
  readStatus,
  runPullLoop,
  type StatusIntent,
  statusAfter,
  TASK_STREAM,
  type Task,
  TaskSet,
  taskConsumerName,
  writeStatus,
} from "../../shared/worker/index.ts";
import { type HttpOutcome, postTask } from "./http-post.ts";
import { recordTransition } from "./observe.ts";
import type { Slots } from "./slots.ts";

type HttpExecutor = Extract<RouteConfig["executor"], { kind: "http" }>;

export interface HttpDispatcherDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly route: RouteConfig & { readonly executor: HttpExecutor };
  readonly index: DispatchIndex;
  /** The process-wide cap shared with every other route of this executor. */
  readonly slots: Slots;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly metrics?: HubMetrics;
}

export interface HttpDispatcher {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** What to do with a task after reading the job's status and dispatch record. */
type Plan =
  | { readonly kind: "skip"; readonly why: string }
  | { readonly kind: "send"; readonly attempt: number; readonly fresh: boolean };

const ONE_MINUTE = 60_000;

/**
 * Delivers one HTTP route's tasks. Pulls from the route's work-queue consumer (its
 * max_ack_pending is the route's cap over all replicas), records each attempt as job.dispatched,
 * POSTs the signed task, and settles the message only after the outcome is stored: ack after
 * done/rejected/error/202, nak(backoff) to retry. The retry therefore lives in JetStream, and a
 * crash mid-backoff resumes on another replica.
 */
export function createHttpDispatcher(deps: HttpDispatcherDeps): HttpDispatcher {
  const { route, logger } = deps;
  const executor = route.executor;
  const timeoutMs = parseDuration(executor.timeout);
  const backoffMs = executor.retry_backoff.map(parseDuration);
  const running = new TaskSet();
  const abort = new AbortController();
  let stopping = false;
  let loop: Promise<void> | undefined;

  const backoff = (attempt: number) =>
    backoffMs[Math.min(attempt - 1, backoffMs.length - 1)] ?? ONE_MINUTE;

  /** Decides from the stored facts, so a redelivered task never repeats finished work. */
  const plan = async (task: Task, current: CurrentStatus): Promise<Plan> => {
    if (isFinal(current.status)) return { kind: "skip", why: "final" };
    if (current.status === "running") return { kind: "skip", why: "running at the executor" };
    const last = current.last?.event;
    if (current.status !== "dispatched" || last?.type !== "job.dispatched") {
      return { kind: "send", attempt: 1, fresh: true };
    }
    const record = await deps.index.get(task.job_id);
    const attempt = last.data.attempt;
    if (record?.attempt === attempt && record.phase === "accepted") {
      return { kind: "skip", why: "accepted by the executor" };
    }
    if (record?.attempt === attempt && record.phase === "retrying") {
      return { kind: "send", attempt: attempt + 1, fresh: true };
    }
    // A crash between "dispatched" and the answer: send the same attempt again (same webhook-id).
    return { kind: "send", attempt, fresh: false };
  };

  const finish = async (
    task: Task,
    known: CurrentStatus,
    intent: StatusIntent,
    traceparent: string | undefined,
  ) => {
    const target: JobStatus =
      intent.type === "job.done" ? "done" : intent.type === "job.error" ? "error" : "rejected";
    const result = await writeStatus(
      deps,
      task,
      (c) => (isFinal(c.status) || !canMove(c.status, target) ? undefined : intent),
      { known, ...(traceparent ? { traceparent } : {}) },
    );
    if (result.kind === "appended") recordTransition(deps.metrics, route.key, result.event, task);
    return result;
  };

  const handle = async (msg: JsMsg): Promise<void> => {
    const task = decodeTask(msg.data);
    if (task === undefined || task.route !== route.key) {
      logger.error({ seq: msg.seq }, "not a task for this route; terminated");
      msg.term("invalid task");
      return;
    }
    const traceparent = msg.headers?.get("traceparent") || undefined;
    const log = logger.child({
      job_id: task.job_id,
      client_id: task.client_id,
      ...(traceparent ? { trace_id: traceIdOf(traceparent) } : {}),
    });
    let current = await readStatus(deps.jsm, task);
    const next = await plan(task, current);
    if (next.kind === "skip") {
      msg.ack();
      return;
    }
    const remainingMs = Date.parse(task.deadline) - deps.clock.now().getTime();
    if (remainingMs <= 0) {
      await finish(
        task,
        current,
        {
          type: "job.error",
          data: { code: "deadline_exceeded", message: "the job passed its deadline" },
        },
        traceparent,
      );
      msg.ack();
      return;
    }
    if (next.attempt > executor.max_attempts) {
      await finish(
        task,
        current,
        {
          type: "job.error",
          data: {
            code: "executor_unavailable",
            message: `the executor failed ${executor.max_attempts} attempts`,
          },
        },
        traceparent,
      );
      msg.ack();
      return;
    }
    // The record comes first: the executor may report before the POST even returns.
    await deps.index.put(task.job_id, {
      client_id: task.client_id,
      route: route.key,
      attempt: next.attempt,
      phase: "sending",
    });
    if (next.fresh) {
      const dispatched = await writeStatus(
        deps,
        task,
        (c) =>
          c.seq === current.seq
            ? { type: "job.dispatched", data: { target: "http", attempt: next.attempt } }
            : undefined,
        { known: current, ...(traceparent ? { traceparent } : {}) },
      );
      if (dispatched.kind === "skipped") {
        // Someone else moved the job (a report, the watchdog, another replica): start over.
        msg.nak(0);
        return;
      }
      recordTransition(deps.metrics, route.key, dispatched.event, task);
      current = statusAfter(dispatched);
    }
    const keepAlive = setInterval(() => msg.working(), 3_000);
    deps.metrics?.executorInFlight.inc({ route: route.key });
    let outcome: HttpOutcome;
    try {
      outcome = await postTask({
        url: executor.url,
        secret: executor.secret,
        task,
        attempt: next.attempt,
        timeoutMs: Math.min(timeoutMs, remainingMs),
        clock: deps.clock,
        signal: abort.signal,
        ...(traceparent ? { traceparent } : {}),
      });
    } finally {
      clearInterval(keepAlive);
      deps.metrics?.executorInFlight.dec({ route: route.key });
    }
    if (abort.signal.aborted) {
      // Shutting down mid-POST: another replica takes the task; it resends the same attempt.
      msg.nak(0);
      return;
    }
    log.info({ attempt: next.attempt, outcome: outcome.kind }, "task sent");
    switch (outcome.kind) {
      case "done":
        await finish(
          task,
          current,
          { type: "job.done", data: { output: outcome.output } },
          traceparent,
        );
        msg.ack();
        return;
      case "accepted":
        await deps.index.put(task.job_id, {
          client_id: task.client_id,
          route: route.key,
          attempt: next.attempt,
          phase: "accepted",
        });
        msg.ack();
        return;
      case "refused":
        await finish(
          task,
          current,
          {
            type: "job.rejected",
            data: { code: "executor_refused", message: `the executor answered ${outcome.status}` },
          },
          traceparent,
        );
        msg.ack();
        return;
      case "bad_response":
        await finish(
          task,
          current,
          {
            type: "job.error",
            data: { code: "executor_bad_response", message: outcome.reason },
          },
          traceparent,
        );
        msg.ack();
        return;
      case "retry": {
        if (next.attempt >= executor.max_attempts) {
          await finish(
            task,
            current,
            {
              type: "job.error",
              data: {
                code: "executor_unavailable",
                message: `the executor failed ${next.attempt} attempts (last: ${outcome.reason})`,
              },
            },
            traceparent,
          );
          msg.ack();
          return;
        }
        await deps.index.put(task.job_id, {
          client_id: task.client_id,
          route: route.key,
          attempt: next.attempt,
          phase: "retrying",
        });
        const delay = Math.max(backoff(next.attempt), outcome.retryAfterMs ?? 0);
        msg.nak(delay);
        return;
      }
      default: {
        const unreachable: never = outcome;
        return unreachable;
      }
    }
  };

  return {
    async start() {
      const consumer = await deps.js.consumers.get(TASK_STREAM, taskConsumerName(route.key));
      loop = runPullLoop({
        consumer,
        free: () => Math.min(route.concurrency - running.size, deps.slots.free()),
        slotFreed: () =>
          route.concurrency - running.size <= 0 ? running.freed() : deps.slots.freed(),
        stopped: () => stopping,
        onError: (err) => logger.warn({ err: (err as Error).message }, "pull failed; retrying"),
        onMessage: (msg) => {
          const release = deps.slots.take();
          running.add(
            handle(msg)
              .catch((err: unknown) => {
                logger.error({ seq: msg.seq, err: (err as Error).message }, "task failed; retry");
                msg.nak(1_000);
              })
              .finally(release),
          );
        },
      });
    },
    async stop() {
      stopping = true;
      abort.abort();
      await loop?.catch(() => undefined);
      await running.settled();
    },
  };
}
