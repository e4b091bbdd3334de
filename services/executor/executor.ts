import type {
  ConsumerMessages,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from "@nats-io/jetstream";
import {
  decodeEvent,
  ensureDurable,
  PoisonMessageError,
  subjectFilters,
  TOPOLOGY,
  TRACEPARENT_HEADER,
} from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import { parseDuration, type RouteConfig, type RouteTable } from "../../shared/config/index.ts";
import { canMove, isFinal, type JobEvent, type RunRequested } from "../../shared/domain/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { traceHeaders, traceIdOf } from "../../shared/trace/index.ts";
import {
  type CurrentStatus,
  encodeTask,
  readStatus,
  type StatusIntent,
  statusAfter,
  statusOf,
  type Task,
  TaskSet,
  taskSubject,
  writeStatus,
} from "../../shared/worker/index.ts";
import { runBuiltin } from "./builtin.ts";
import { recordTransition } from "./observe.ts";
import { createSlots, type Slots } from "./slots.ts";

/** Reads a compiled tool set by name (shared/tools' ToolSetStore fits). */
export interface ToolSetReader {
  getToolSet(name: string): Promise<readonly object[] | undefined>;
}

export interface ExecutorDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly routes: RouteTable;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** Jobs admitted or run at once by this process. */
  readonly concurrency: number;
  /** The process-wide pool builtins share with the HTTP dispatchers. */
  readonly slots?: Slots;
  readonly metrics?: HubMetrics;
  /** Needed only when a route names a tool_set. */
  readonly toolSets?: ToolSetReader;
}

export interface Executor {
  start(): Promise<void>;
  /** Stops pulling; in-flight jobs finish (or are left un-acked for redelivery). */
  stop(): Promise<void>;
  inFlight(): number;
}

const QUEUED: CurrentStatus = { status: "queued", last: null, seq: 0 };

/**
 * Consumes run.requested and admits each job: refuses it (route disabled or removed, input above
 * the limit, deadline already passed), runs a builtin in process, or hands the task to the
 * route's work queue (HTTP dispatcher or NATS workers). Every status event is appended with the
 * job subject's expected last sequence, and the message is acked only after that is stored. A
 * redelivered request first reads the job's status, so a finished job is never run again.
 */
export function createExecutor(deps: ExecutorDeps): Executor {
  const { logger } = deps;
  const slots = deps.slots ?? createSlots(deps.concurrency);
  let messages: ConsumerMessages | undefined;
  const running = new TaskSet();
  // Never aborted by stop(): a graceful stop lets builtins finish; the signal is for tests.
  const abort = new AbortController();

  const write = async (
    run: RunRequested,
    known: CurrentStatus,
    intent: StatusIntent,
    traceparent: string | undefined,
  ) => {
    const target = statusOf(intent.type);
    const result = await writeStatus(
      deps,
      run,
      (c) => (isFinal(c.status) || !canMove(c.status, target) ? undefined : intent),
      { known, ...(traceparent ? { traceparent } : {}) },
    );
    if (result.kind === "appended") {
      recordTransition(deps.metrics, run.data.route, result.event, {
        created_at: run.occurred_at,
      });
    }
    return result;
  };

  /** The route's refusal of this run, if any. */
  const refusal = (run: RunRequested, route: RouteConfig | undefined): StatusIntent | undefined => {
    if (!route?.enabled) {
      return {
        type: "job.rejected",
        data: {
          code: route ? "route_disabled" : "route_unknown",
          message: route ? "The route is disabled." : "The route is not configured.",
        },
      };
    }
    if (Buffer.byteLength(run.data.input, "utf8") > route.max_input_bytes) {
      return {
        type: "job.rejected",
        data: {
          code: "input_too_large",
          message: `input exceeds the route's limit of ${route.max_input_bytes} bytes`,
        },
      };
    }
    return undefined;
  };

  const buildTask = async (
    run: RunRequested,
    route: RouteConfig,
    deadline: Date,
  ): Promise<Task | StatusIntent> => {
    let tools: Record<string, unknown>[] | undefined;
    if (route.tool_set !== undefined) {
      const found = await deps.toolSets?.getToolSet(route.tool_set);
      if (found === undefined) {
        return {
          type: "job.rejected",
          data: { code: "tool_set_unknown", message: "The route's tool set is not published." },
        };
      }
      tools = found.map((t) => ({ ...t }));
    }
    return {
      job_id: run.job_id,
      client_id: run.client_id,
      route: route.key,
      input: run.data.input,
      ...(run.data.metadata === undefined ? {} : { metadata: { ...run.data.metadata } }),
      created_at: run.occurred_at,
      deadline: deadline.toISOString(),
      ...(tools === undefined ? {} : { tools }),
    };
  };

  const runBuiltinJob = async (
    run: RunRequested,
    route: RouteConfig,
    known: CurrentStatus,
    msg: JsMsg,
    traceparent: string | undefined,
  ) => {
    if (route.executor.kind !== "builtin") return;
    const executor = route.executor;
    let current = known;
    // An instant builtin goes straight to job.done: a job.running nobody can observe would cost
    // one more stored event, projector write and consumer delivery per job.
    if (executor.name === "sleep" && executor.sleep_ms > 0) {
      const started = await write(run, current, { type: "job.running", data: {} }, traceparent);
      if (started.kind === "skipped" && isFinal(started.current.status)) return;
      current = statusAfter(started);
    }
    while (slots.free() <= 0) await slots.freed();
    const release = slots.take();
    deps.metrics?.executorInFlight.inc({ route: route.key });
    try {
      const result = await runBuiltin(executor, run.data.input, {
        working: () => msg.working(),
        signal: abort.signal,
      });
      await write(run, current, { type: "job.done", data: { output: result.output } }, traceparent);
    } finally {
      release();
      deps.metrics?.executorInFlight.dec({ route: route.key });
    }
  };

  const handle = async (msg: JsMsg): Promise<void> => {
    let decoded: JobEvent;
    try {
      decoded = decodeEvent(msg.data);
    } catch (err) {
      if (!(err instanceof PoisonMessageError)) throw err;
      logger.error({ seq: msg.seq, reason: err.message }, "poison run.requested terminated");
      msg.term(err.message);
      return;
    }
    if (decoded.type !== "run.requested") {
      msg.term("not a run.requested event");
      return;
    }
    const run = decoded;
    const traceparent = msg.headers?.get(TRACEPARENT_HEADER) || undefined;
    const log = logger.child({
      job_id: run.job_id,
      client_id: run.client_id,
      ...(traceparent ? { trace_id: traceIdOf(traceparent) } : {}),
    });
    // A first delivery assumes "queued" (the append expecting 0 catches anything else); a
    // redelivery reads first, so a finished job is acked without being run again.
    const current = msg.info.redelivered ? await readStatus(deps.jsm, run) : QUEUED;
    if (isFinal(current.status)) {
      msg.ack();
      return;
    }
    const route = deps.routes.route(run.data.route);
    const refused = refusal(run, route);
    if (refused || !route) {
      if (refused) await write(run, current, refused, traceparent);
      msg.ack();
      return;
    }
    const deadline = new Date(Date.parse(run.occurred_at) + parseDuration(route.deadline));
    if (deps.clock.now() >= deadline) {
      const expired: StatusIntent = {
        type: "job.error",
        data: { code: "deadline_exceeded", message: "the job passed its deadline while queued" },
      };
      await write(run, current, expired, traceparent);
      msg.ack();
      return;
    }
    switch (route.executor.kind) {
      case "builtin":
        // A builtin left "running" by a crashed process runs again: its work died with it.
        await runBuiltinJob(run, route, current, msg, traceparent);
        break;
      case "http":
      case "nats": {
        // Dispatched or running means the work queue already has (or had) the task.
        if (current.status !== "queued" && route.executor.kind === "http") break;
        if (current.status === "running") break;
        const task = await buildTask(run, route, deadline);
        if (!("job_id" in task)) {
          await write(run, current, task, traceparent);
          break;
        }
        if (route.executor.kind === "nats" && current.status === "queued") {
          // Recorded before the publish, so a worker's job.running always follows it; a crash in
          // between leaves "dispatched", and the redelivery publishes.
          const intent: StatusIntent = {
            type: "job.dispatched",
            data: { target: "nats", attempt: 1 },
          };
          const dispatched = await write(run, current, intent, traceparent);
          if (dispatched.kind === "skipped" && dispatched.current.status !== "dispatched") break;
        }
        // The job id as Nats-Msg-Id: a republish after a crash is dropped by the server.
        await deps.js.publish(taskSubject(route.key), encodeTask(task), {
          msgID: run.job_id,
          ...(traceparent ? { headers: traceHeaders(traceparent) } : {}),
        });
        break;
      }
      default: {
        const unreachable: never = route.executor;
        return unreachable;
      }
    }
    log.debug({ route: route.key }, "run admitted");
    msg.ack();
  };

  return {
    async start() {
      await ensureDurable(deps.jsm, {
        name: TOPOLOGY.consumers.executor,
        filterSubject: subjectFilters.kind("run"),
        // Short, so a crashed process's prefetched requests come back soon; builtins keep
        // their message alive with working() every 3 s.
        ackWaitMs: 10_000,
        maxAckPending: Math.max(deps.concurrency * 4, 256),
      });
      const consumer = await deps.js.consumers.get(
        TOPOLOGY.eventsStream,
        TOPOLOGY.consumers.executor,
      );
      messages = await consumer.consume({ max_messages: deps.concurrency });
      const stream = messages;
      void (async () => {
        for await (const msg of stream) {
          while (running.size >= deps.concurrency) await running.freed();
          running.add(
            handle(msg).catch((err: unknown) => {
              logger.error(
                { seq: msg.seq, err: (err as Error).message },
                "job handling failed; will retry",
              );
              msg.nak(1_000);
            }),
          );
        }
      })();
      logger.info({ concurrency: deps.concurrency }, "executor started");
    },
    async stop() {
      await messages?.close();
      await running.settled();
    },
    inFlight: () => running.size,
  };
}
