import {
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import { isJsError, TRACEPARENT_HEADER, terminate } from "../bus/index.ts";
import { type Clock, systemClock } from "../clock/index.ts";
import type { JobErrorInfo, StatusIntent } from "../domain/index.ts";
import { type IdGenerator, randomIds } from "../ids/index.ts";
import {
  type CurrentStatus,
  createEventLayout,
  type EventLayout,
  SINGLE_PARTITION_LAYOUT,
  statusAfterWrite,
  writeStatus,
} from "../jobs/index.ts";
import { headerOf } from "../nats/index.ts";
import { CANCEL_SUBJECT_ROOT, decodeCancelNotice } from "../schedule/index.ts";
import { traceIdOf } from "../trace/index.ts";
import {
  decodeTask,
  PARTITIONS_HEADER,
  TASK_STREAM,
  type Task,
  type ToolSetReader,
  taskConsumerName,
  withTools,
} from "./protocol.ts";
import { type PullLoop, runPullLoop, TaskSet } from "./pull.ts";

/** What a handler gets besides the task. */
export interface TaskContext {
  /**
   * Aborted when the worker stops, when the job passes its deadline, or when the job is cancelled
   * (its reason is then a TaskCancelledError). A result returned after a cancel is kept in the
   * stream as history and does not change the job.
   */
  readonly signal: AbortSignal;
  /** Tells JetStream the task is still being worked on (the worker also does this on a timer). */
  readonly working: () => void;
  /** 1 on the first delivery; higher when a worker died or let the ack wait pass. */
  readonly delivery: number;
}

/** Throw this from a handler to finish the job as error with your own code. */
export class TaskFailedError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = "TaskFailedError";
  }
}

/** Throw this from a handler to refuse the task (job.rejected). */
export class TaskRejectedError extends TaskFailedError {
  override readonly name = "TaskRejectedError";
}

/** The reason of a handler's signal when the job was cancelled (POST /jobs/{id}/cancel). */
export class TaskCancelledError extends Error {
  override readonly name = "TaskCancelledError";
  readonly code = "cancelled";
}

/** Minimal logger shape, so a worker can pass pino, console-like or nothing. */
export interface WorkerLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface WorkerOptions {
  readonly nc: NatsConnection;
  /** The route key whose work queue this worker pulls. */
  readonly route: string;
  /**
   * Returns the job's output (any JSON value; nothing is null); throws TaskFailedError or
   * TaskRejectedError to fail.
   */
  readonly handler: (task: Task, ctx: TaskContext) => Promise<unknown>;
  /** Tasks this process runs at once (the route's `concurrency` caps all workers together). */
  readonly concurrency?: number;
  readonly logger?: WorkerLogger;
  readonly clock?: Clock;
  readonly ids?: IdGenerator;
  /** How long one pull waits for tasks before asking again (default 30 s; see runPullLoop). */
  readonly pullExpiresMs?: number;
  /** Where a tool set too large to travel in the task is read; default: the hub's tool-set store. */
  readonly toolSets?: ToolSetReader;
}

export interface Worker {
  /** Waits for the route's consumer (the executor service creates it) and starts pulling. */
  start(): Promise<void>;
  /** Stops pulling, aborts handlers, and waits for them; unfinished tasks are redelivered. */
  stop(): Promise<void>;
  inFlight(): number;
}

const silent: WorkerLogger = { info() {}, warn() {}, error() {} };

function failure(err: unknown): { type: "job.error" | "job.rejected"; data: JobErrorInfo } {
  if (err instanceof TaskFailedError) {
    return {
      type: err instanceof TaskRejectedError ? "job.rejected" : "job.error",
      data: { code: err.code.slice(0, 64) || "worker_error", message: err.message.slice(0, 2000) },
    };
  }
  return {
    type: "job.error",
    data: { code: "worker_error", message: "the worker's handler failed" },
  };
}

/**
 * A NATS worker for one route. Protocol (docs/executors.md): pull a task from the route's
 * work-queue consumer; read the job's status and skip it when final; append job.running; call
 * the handler while sending `working()` so the ack wait does not pass; append job.done or
 * job.error; ack only after that event is stored. Every append expects the job subject's last
 * sequence, so a task redelivered to a second worker finishes the job once. A worker that dies
 * leaves its task un-acked, and JetStream redelivers it after the ack wait.
 */
export function createWorker(options: WorkerOptions): Worker {
  const js: JetStreamClient = jetstream(options.nc);
  let jsm: JetStreamManager | undefined;
  /** Layouts by partition count, from the tasks' headers (one, in practice). */
  const layouts = new Map<number, EventLayout>();
  const layoutOf = (msg: JsMsg): EventLayout => {
    const given = headerOf(msg, PARTITIONS_HEADER);
    if (given === undefined) return SINGLE_PARTITION_LAYOUT;
    const partitions = Number(given);
    let layout = layouts.get(partitions);
    if (layout === undefined) {
      layout = createEventLayout(partitions);
      layouts.set(partitions, layout);
    }
    return layout;
  };
  const concurrency = Math.max(1, options.concurrency ?? 1);
  const logger = options.logger ?? silent;
  const deps = (layout: EventLayout = SINGLE_PARTITION_LAYOUT) => ({
    js,
    jsm: jsm as JetStreamManager,
    layout,
    clock: options.clock ?? systemClock,
    ids: options.ids ?? randomIds,
  });
  const running = new TaskSet();
  const abort = new AbortController();
  let store: Promise<ToolSetReader> | undefined;
  const toolSets = (): ToolSetReader =>
    options.toolSets ?? {
      async getToolSet(name) {
        store ??= import("../tools/index.ts").then((m) => m.openToolSetStore(options.nc));
        return (await store).getToolSet(name);
      },
    };
  let stopping = false;
  let loop: Promise<PullLoop | undefined> | undefined;
  let ackWaitMs = 30_000;
  /** Per running task: aborted by a cancel notice for its job. */
  const cancels = new Map<string, AbortController>();
  let cancelNotices: Subscription | undefined;

  /** What the worker knows of the job before its first append: nothing after a redelivery. */
  const knownAtStart = (task: Task, delivery: number): CurrentStatus | undefined =>
    delivery === 1 && task.expected_seq !== undefined
      ? { status: "dispatched", last: null, seq: task.expected_seq }
      : undefined;

  /** Runs the handler; the outcome to record, or undefined when stopping (the task is nak'ed). */
  const runHandler = async (
    task: Task,
    msg: JsMsg,
    signal: AbortSignal,
  ): Promise<StatusIntent | undefined> => {
    try {
      const output = await options.handler(task, {
        signal,
        working: () => msg.working(),
        delivery: msg.info.deliveryCount,
      });
      // A handler that returns nothing has output null: JSON has no undefined, and a job.done
      // without its output fails the event schema (every consumer would drop it as poison).
      return { type: "job.done", data: { output: output ?? null } };
    } catch (err) {
      if (abort.signal.aborted) return undefined;
      const failed = failure(err);
      logger.warn({ job_id: task.job_id, code: failed.data.code }, "task failed");
      return failed;
    }
  };

  const handle = async (msg: JsMsg): Promise<void> => {
    const task = decodeTask(msg.data);
    if (task === undefined || task.route !== options.route) {
      logger.error({ seq: msg.seq }, "not a task for this route; terminated");
      terminate(msg);
      return;
    }
    const ref = { client_id: task.client_id, job_id: task.job_id };
    // The run's trace context travels on the task message and on every event the worker writes.
    const traceparent = headerOf(msg, TRACEPARENT_HEADER);
    const trace = traceparent ? { traceparent } : {};
    const known = knownAtStart(task, msg.info.deliveryCount);
    const layout = layoutOf(msg);
    const started = await writeStatus(deps(layout), {
      ref,
      intent: { type: "job.running", data: {} },
      ...(known ? { known } : {}),
      ...trace,
    });
    if (started.kind === "refused") {
      // Finished already (by another worker, a deadline, a cancel): nothing to do.
      msg.ack();
      return;
    }
    const keepAlive = setInterval(() => msg.working(), Math.max(250, Math.floor(ackWaitMs / 3)));
    const full = await withTools(task, toolSets()).catch(() => undefined);
    const deadlineMs = Date.parse(task.deadline) - deps().clock.now().getTime();
    const cancel = new AbortController();
    cancels.set(task.job_id, cancel);
    const signal = AbortSignal.any([
      abort.signal,
      cancel.signal,
      AbortSignal.timeout(Math.max(1, deadlineMs)),
    ]);
    const outcome: StatusIntent | undefined =
      full === undefined
        ? {
            type: "job.rejected",
            data: { code: "tool_set_unknown", message: "The route's tool set is not published." },
          }
        : await runHandler(full, msg, signal).finally(() => cancels.delete(task.job_id));
    clearInterval(keepAlive);
    if (cancel.signal.aborted && outcome?.type !== "job.done") {
      // Cancelled, and the handler stopped: the job is final already, nothing to record.
      msg.ack();
      return;
    }
    if (outcome === undefined) {
      // Stopping: leave the task for another worker.
      msg.nak();
      return;
    }
    // The final event carries the run summary the executor put in the task, so the callback
    // service needs no read.
    const intent = (
      task.run === undefined ? outcome : { ...outcome, data: { ...outcome.data, run: task.run } }
    ) as StatusIntent;
    const finished = await writeStatus(deps(layout), {
      ref,
      intent,
      known: statusAfterWrite(started),
      ...trace,
    });
    logger.info(
      {
        job_id: task.job_id,
        route: task.route,
        delivery: msg.info.deliveryCount,
        ...(traceparent ? { trace_id: traceIdOf(traceparent) } : {}),
        status: statusAfterWrite(finished).status,
        persisted: finished.kind === "appended",
      },
      "task finished",
    );
    msg.ack();
  };

  const pull = async (): Promise<PullLoop | undefined> => {
    const consumer = await js.consumers.get(TASK_STREAM, taskConsumerName(options.route));
    ackWaitMs = Math.floor(((await consumer.info(true)).config.ack_wait ?? 30e9) / 1_000_000);
    if (stopping) return undefined;
    return runPullLoop({
      consumer,
      nc: options.nc,
      free: () => concurrency - running.size,
      slotFreed: () => running.freed(),
      expiresMs: options.pullExpiresMs ?? 30_000,
      onError: (err) => logger.warn({ err: (err as Error).message }, "pull failed; retrying"),
      onMessage: (msg) =>
        running.add(
          handle(msg).catch((err: unknown) => {
            logger.error({ seq: msg.seq, err: (err as Error).message }, "task handling failed");
            msg.nak(1_000);
          }),
        ),
    });
  };

  /**
   * The executor service creates the route's work queue; wait for it rather than guess its limits,
   * and say what is missing while waiting: a route that is not configured with executor kind nats
   * (or an executor service that does not run) otherwise looks like a worker with nothing to do.
   */
  const waitForQueue = async (manager: JetStreamManager) => {
    const name = taskConsumerName(options.route);
    const started = Date.now();
    let nextReport = started;
    for (;;) {
      let problem: string;
      try {
        await manager.consumers.info(TASK_STREAM, name);
        return;
      } catch (err) {
        problem = isJsError(err, "consumerNotFound", "streamNotFound")
          ? `route ${options.route} has no work queue (${TASK_STREAM}/${name}): is it configured with executor { kind: nats } and is the executor service running?`
          : `cannot look up the work queue of route ${options.route}: ${(err as Error).message}`;
      }
      if (stopping) return;
      if (Date.now() >= nextReport) {
        logger.warn(
          { route: options.route, waited_s: Math.round((Date.now() - started) / 1000) },
          `${problem} Waiting for it.`,
        );
        nextReport = Date.now() + 15_000;
      }
      await Bun.sleep(500);
    }
  };

  return {
    async start() {
      jsm = await jetstreamManager(options.nc);
      // Cancels are core NATS notices (best effort): the job is already final in the stream.
      cancelNotices = options.nc.subscribe(`${CANCEL_SUBJECT_ROOT}.>`, {
        callback: (_err, m) => {
          const notice = decodeCancelNotice(m.data);
          if (notice)
            cancels.get(notice.job_id)?.abort(new TaskCancelledError("the job was cancelled"));
        },
      });
      await waitForQueue(jsm);
      if (stopping) return;
      // runPullLoop resumes after a pull that ends in an error (a restarting server answers 409).
      loop = pull();
      logger.info({ route: options.route, concurrency }, "worker started");
    },
    async stop() {
      stopping = true;
      cancelNotices?.unsubscribe();
      abort.abort();
      await (await loop?.catch(() => undefined))?.stop();
      await running.settled();
    },
    inFlight: () => running.size,
  };
}
