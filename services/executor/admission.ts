import type { Consumer, JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  decodeEvent,
  ensureDurable,
  HUB_PULL,
  PoisonMessageError,
  type PullWindow,
  TOPOLOGY,
  TRACEPARENT_HEADER,
  terminate,
} from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import { parseDuration, type RouteTable } from "../../shared/config/index.ts";
import { decideAdmission, isFinal, type RunRequested } from "../../shared/domain/index.ts";
import { type EventLayout, QUEUED, readStatus } from "../../shared/jobs/index.ts";
import { type Logger, lazyChild } from "../../shared/log/index.ts";
import { headerOf } from "../../shared/nats/index.ts";
import { endWhenSettled, NO_TRACING, type Tracing } from "../../shared/telemetry/index.ts";
import { traceIdOf } from "../../shared/trace/index.ts";
import { type PullLoop, runPullLoop, TaskSet } from "../../shared/worker/index.ts";
import { type JobWriter, jobContextOf } from "./job-writer.ts";
import { ExecutorStoppingError, type KindRuntime } from "./kinds/kind.ts";
import type { Slots } from "./slots.ts";

export interface AdmissionDeps {
  /** Its reconnects start the runs' pulls again. */
  readonly nc: Pick<NatsConnection, "status">;
  readonly js: JetStreamClient;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
  readonly jsm: JetStreamManager;
  readonly routes: RouteTable;
  /** The started runtime of every configured executor kind. */
  readonly kinds: ReadonlyMap<string, KindRuntime>;
  readonly writer: JobWriter;
  readonly slots: Slots;
  readonly logger: Logger;
  readonly clock: Clock;
  /** A `dispatch` span per run (docs/operations.md, "Traces"). */
  readonly tracing?: Tracing;
}

export interface Admission {
  start(): Promise<void>;
  /**
   * Stops pulling; jobs in hand finish or, where their kind cuts them short
   * (ExecutorStoppingError), are handed back at once.
   */
  stop(): Promise<void>;
  inFlight(): number;
}

/** run.requested kept alive while a job is held longer than this (ack_wait is 10 s). */
const KEEP_ALIVE_MS = 3_000;

/**
 * Consumes run.requested (durable "executor") and hands each run to its route's executor kind.
 * A first delivery assumes the job is queued and reads nothing (the kind's first append expects
 * sequence 0, which catches anything else); a redelivery reads the job's status first, so a
 * finished job is not run again. Refusals (route unknown or disabled, input too large, deadline
 * passed while queued) are decided by the domain. The message is acked only after the kind has
 * persisted what it did; pulls are sized to the process's free slots, so no message waits in
 * memory while its ack wait runs.
 */
export function createAdmission(deps: AdmissionDeps): Admission {
  const { logger } = deps;
  const tracing = deps.tracing ?? NO_TRACING;
  const running = new TaskSet();
  const loops: PullLoop[] = [];

  const admit = async (msg: JsMsg, run: RunRequested, dispatchSpan?: string): Promise<void> => {
    const traceparent = headerOf(msg, TRACEPARENT_HEADER);
    const current = msg.info.redelivered ? await readStatus(deps, run) : QUEUED;
    if (isFinal(current.status)) return msg.ack();
    const context = jobContextOf(run, traceparent);
    const route = deps.routes.route(run.data.route);
    const decision = decideAdmission({
      run,
      route: route && {
        enabled: route.enabled,
        maxInputBytes: route.max_input_bytes,
        deadlineMs: parseDuration(route.deadline),
      },
      inputBytes: Buffer.byteLength(run.data.input, "utf8"),
      now: deps.clock.now().getTime(),
    });
    if (decision.kind === "end" || route === undefined) {
      if (decision.kind === "end")
        await deps.writer.write(context, decision.intent, { known: current });
      return msg.ack();
    }
    const kind = deps.kinds.get(route.executor.kind);
    if (kind === undefined) throw new Error(`no runtime for executor kind ${route.executor.kind}`);
    const log = lazyChild(logger, () => ({
      job_id: run.job_id,
      client_id: run.client_id,
      ...(traceparent ? { trace_id: traceIdOf(traceparent) } : {}),
    }));
    let lastKeepAlive = 0;
    await kind.run({
      run,
      route,
      context,
      deadlineAt: decision.deadlineAt,
      current,
      keepAlive: () => {
        const now = Date.now();
        if (now - lastKeepAlive < KEEP_ALIVE_MS) return;
        lastKeepAlive = now;
        msg.working();
      },
      log,
      dispatchSpan,
    });
    msg.ack();
  };

  const handle = async (msg: JsMsg): Promise<void> => {
    let event: ReturnType<typeof decodeEvent>;
    try {
      event = decodeEvent(msg.data);
    } catch (err) {
      if (!(err instanceof PoisonMessageError)) throw err;
      logger.error({ seq: msg.seq, reason: err.message }, "poison run.requested terminated");
      return terminate(msg);
    }
    if (event.type !== "run.requested") return terminate(msg);
    const span = tracing.start("dispatch", {
      parent: tracing.enabled ? headerOf(msg, TRACEPARENT_HEADER) : undefined,
      kind: "consumer",
      attributes: { job_id: event.job_id, client_id: event.client_id, route: event.data.route },
    });
    await endWhenSettled(span, admit(msg, event, span.traceparent));
  };

  const pullRuns = (consumer: Consumer, window: PullWindow): PullLoop =>
    runPullLoop({
      consumer,
      nc: deps.nc,
      expiresMs: window.expires,
      idleHeartbeatMs: window.idle_heartbeat,
      free: () => deps.slots.free(),
      slotFreed: () => deps.slots.freed(),
      onError: (err) => logger.warn({ err: (err as Error).message }, "pull failed; retrying"),
      onMessage: (msg) => {
        const release = deps.slots.take();
        running.add(
          handle(msg)
            .catch((err: unknown) => {
              if (err instanceof ExecutorStoppingError) {
                logger.info({ seq: msg.seq }, "run handed back: the executor is stopping");
                return msg.nak(0);
              }
              logger.error(
                { seq: msg.seq, err: (err as Error).message },
                "job handling failed; will retry",
              );
              msg.nak(1_000);
            })
            .finally(release),
        );
      },
    });

  return {
    async start() {
      // Every replica pulls from every partition's durable; the slots are shared by all.
      for (let p = 0; p < deps.layout.partitions; p++) {
        const stream = deps.layout.stream(p);
        await ensureDurable(deps.jsm, {
          stream,
          name: TOPOLOGY.consumers.executor,
          filterSubject: deps.layout.filters.kind(p, "run"),
          // Short, so a crashed process's runs come back soon; held jobs call working().
          ackWaitMs: 10_000,
          maxAckPending: Math.max(deps.slots.size * 4, 256),
        });
        const consumer = await deps.js.consumers.get(stream, TOPOLOGY.consumers.executor);
        loops.push(pullRuns(consumer, HUB_PULL));
      }
      logger.info({ concurrency: deps.slots.size }, "executor admission started");
    },
    async stop() {
      await Promise.all(loops.map((loop) => loop.stop()));
      await running.settled();
    },
    inFlight: () => running.size,
  };
}
