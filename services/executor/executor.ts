import type {
  ConsumerMessages,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from "@nats-io/jetstream";
import {
  appendEvent,
  decodeEvent,
  ensureDurable,
  PoisonMessageError,
  readLastEvent,
  subjectFilters,
  TOPOLOGY,
  TRACEPARENT_HEADER,
} from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import type { RouteTable } from "../../shared/config/index.ts";
import {
  evolve,
  isFinal,
  type JobEvent,
  type JobState,
  type RunRequested,
} from "../../shared/domain/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { runBuiltin } from "./builtin.ts";

export interface ExecutorDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly routes: RouteTable;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** Jobs run at once by this process (the consumer's max_ack_pending bounds all replicas). */
  readonly concurrency: number;
}

export interface Executor {
  start(): Promise<void>;
  /** Stops pulling; in-flight jobs finish (or are left un-acked for redelivery). */
  stop(): Promise<void>;
  inFlight(): number;
}

type Outcome = Extract<
  JobEvent,
  { type: "job.done" | "job.error" | "job.rejected" | "job.running" }
>;

/**
 * Consumes run.requested and drives each job to a final status. Every status event is appended
 * with the job subject's expected last sequence, so a redelivered request never produces a second
 * outcome, and the message is acked only after the outcome is persisted.
 */
export function createExecutor(deps: ExecutorDeps): Executor {
  const { logger } = deps;
  let messages: ConsumerMessages | undefined;
  const running = new Set<Promise<void>>();
  const abort = new AbortController();

  const event = <T extends Outcome["type"]>(
    run: RunRequested,
    type: T,
    data: Extract<Outcome, { type: T }>["data"],
  ): Outcome =>
    ({
      id: deps.ids.next("evt"),
      type,
      schema_version: 1,
      job_id: run.job_id,
      client_id: run.client_id,
      occurred_at: deps.clock.now().toISOString(),
      data,
    }) as Outcome;

  /** The job's status state and the sequence to expect on its `.job` subject. */
  const readState = async (run: RunRequested): Promise<{ state: JobState; seq: number }> => {
    const last = await readLastEvent(deps.jsm, run.client_id, run.job_id, "job");
    const queued = evolve(null, run);
    return { state: last ? evolve(queued, last.event) : queued, seq: last?.seq ?? 0 };
  };

  /** Appends `next` expecting `seq`; on a conflict re-reads and stops if the job is already final. */
  const appendOutcome = async (
    run: RunRequested,
    next: Outcome,
    seq: number,
    traceparent: string | undefined,
  ): Promise<{ ok: true; seq: number } | { ok: false }> => {
    const result = await appendEvent(deps.js, next, {
      expectedLastSubjectSeq: seq,
      ...(traceparent ? { traceparent } : {}),
    });
    if (result.kind !== "conflict") return { ok: true, seq: result.seq };
    const current = await readState(run);
    if (current.state && isFinal(current.state.status)) return { ok: false };
    const retry = await appendEvent(deps.js, next, {
      expectedLastSubjectSeq: current.seq,
      ...(traceparent ? { traceparent } : {}),
    });
    return retry.kind === "conflict" ? { ok: false } : { ok: true, seq: retry.seq };
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
      request_id: run.data.request_id,
    });
    // A redelivery may find the job already finished (or in flight elsewhere): read first then.
    let seq = 0;
    if (msg.info.redelivered) {
      const current = await readState(run);
      if (current.state && isFinal(current.state.status)) {
        msg.ack();
        return;
      }
      seq = current.seq;
    }
    const route = deps.routes.route(run.data.route);
    let outcome: Outcome;
    if (!route?.enabled) {
      outcome = event(run, "job.rejected", {
        code: route ? "route_disabled" : "route_unknown",
        message: route ? "The route is disabled." : "The route is not configured.",
      });
    } else if (Buffer.byteLength(run.data.input, "utf8") > route.max_input_bytes) {
      outcome = event(run, "job.rejected", {
        code: "input_too_large",
        message: `input exceeds the route's limit of ${route.max_input_bytes} bytes`,
      });
    } else {
      if (route.executor.name === "sleep") {
        const started = await appendOutcome(run, event(run, "job.running", {}), seq, traceparent);
        if (!started.ok) {
          msg.ack();
          return;
        }
        seq = started.seq;
      }
      const result = await runBuiltin(route, run.data.input, {
        working: () => msg.working(),
        signal: abort.signal,
      });
      outcome = event(run, "job.done", { output: result.output });
    }
    const done = await appendOutcome(run, outcome, seq, traceparent);
    log.info({ status: outcome.type, persisted: done.ok }, "job outcome");
    msg.ack();
  };

  return {
    async start() {
      await ensureDurable(deps.jsm, {
        name: TOPOLOGY.consumers.executor,
        filterSubject: subjectFilters.kind("run"),
        ackWaitMs: 30_000,
        maxAckPending: Math.max(deps.concurrency * 4, 256),
      });
      const consumer = await deps.js.consumers.get(
        TOPOLOGY.eventsStream,
        TOPOLOGY.consumers.executor,
      );
      messages = await consumer.consume({ max_messages: deps.concurrency });
      void (async () => {
        for await (const msg of messages as ConsumerMessages) {
          while (running.size >= deps.concurrency) await Promise.race(running);
          const task = handle(msg)
            .catch((err: unknown) => {
              logger.error(
                { seq: msg.seq, err: (err as Error).message },
                "job handling failed; will retry",
              );
              msg.nak(1_000);
            })
            .finally(() => running.delete(task));
          running.add(task);
        }
      })();
      logger.info({ concurrency: deps.concurrency }, "executor started");
    },
    async stop() {
      await messages?.close();
      await Promise.allSettled([...running]);
    },
    inFlight: () => running.size,
  };
}
