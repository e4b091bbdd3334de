import type { JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  consumeRecovering,
  decodeEvent,
  EVENT_TYPE_HEADER,
  ensureDurable,
  logConsumeRestarts,
  PoisonMessageError,
  type RecoveringConsume,
  TOPOLOGY,
  TRACEPARENT_HEADER,
  terminate,
} from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import type { ClientConfig } from "../../shared/config/index.ts";
import {
  type CallbackStep,
  type DeliveryTrigger,
  decideCallbackStep,
  type FinalEvent,
  isFinalEvent,
  isFinalEventType,
} from "../../shared/domain/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import { appendEvent, type EventLayout, newEvent, readLastEvent } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { headerOf } from "../../shared/nats/index.ts";
import {
  type ConnectionPool,
  createConnectionPool,
  FETCH_REQUESTS_AT_ONCE,
  type Resolver,
} from "../../shared/net/index.ts";
import {
  CALLBACK_QUEUE_CONSUMER,
  CALLBACK_QUEUE_STREAM,
  CALLBACK_QUEUE_SUBJECT_ROOT,
  type CallbackWakeup,
  decodeCallbackWakeup,
  ensureScheduleStreams,
  publishCallbackWakeup,
} from "../../shared/schedule/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import { createAttemptRunner, type Delivery, type DeliveryEnd } from "./delivery.ts";
import { createDestinationCache, createLanes } from "./lanes.ts";
import { completedJobOf, runSummaryOf } from "./payload.ts";
import { createJobGate, createSeenMark } from "./repeats.ts";
import { ackWaitMs, type CallbackSettings } from "./settings.ts";

/** A queue entry woken this close to its due time is taken rather than parked again. */
const SLACK_MS = 50;
/** First wait of a delivery its lane could not hold; doubles per deferral up to the cap. */
const DEFER_BASE_MS = 2_000;
const DEFER_MAX_MS = 5 * 60_000;

export interface CallbackServiceDeps {
  readonly js: JetStreamClient;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
  readonly jsm: JetStreamManager;
  /** The connection's status: after a reconnect, earlier final events may be delivered again. */
  readonly nc: Pick<NatsConnection, "status">;
  readonly settings: CallbackSettings;
  /** The client's config; its secrets are read at every attempt, so each attempt signs with all active ones. */
  readonly client: (clientId: string) => ClientConfig | undefined;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly replicas?: number;
  /** DNS for delivery-time checks; tests inject names that resolve to 127.0.0.1. */
  readonly resolver?: Resolver;
  /** Uniform [0, 1) for jitter. */
  readonly random?: () => number;
  readonly metrics?: Pick<HubMetrics, "callbackAttempts" | "callbackLatency">;
  /** A `callback` span per attempt, continuing the job's trace. */
  readonly tracing?: Tracing;
  /** Keep-alive connections per checked destination; default: a pool owned by the service. */
  readonly connections?: ConnectionPool;
}

export interface CallbackService {
  start(): Promise<void>;
  /** Stops pulling; attempts in flight finish and are settled. */
  stop(): Promise<void>;
}

/**
 * Delivers signed completion callbacks (docs/callbacks.md). The durable `callback` takes final
 * job events from `.job`; a first delivery of an event stored since this process last connected
 * needs no read: the final event carries the run summary (callback_url, request_id, route) and
 * nothing is on `.cb` yet (older ones are checked against `.cb`: repeats.ts); a delivery that
 * succeeds is recorded as one `callback.delivered`. Attempts run in per-destination lanes under a
 * global cap. Everything that must wait — a retry, a delivery its lane cannot hold, an operator's
 * redelivery — waits in the SWITCHYARD_CALLBACKS work queue, never in the `callback` consumer,
 * so a dead receiver cannot fill that consumer and stall everyone's first deliveries.
 */
export function createCallbackService(deps: CallbackServiceDeps): CallbackService {
  const { logger, settings } = deps;
  const streams: RecoveringConsume[] = [];
  const loops: Promise<void>[] = [];
  const nowMs = () => deps.clock.now().getTime();
  // As many idle connections per destination as its lane runs attempts: fewer closed and reopened
  // one every few callbacks (connect/close were 9% of the service's CPU in the bench profile).
  const connections =
    deps.connections ??
    createConnectionPool({ maxIdlePerDestination: settings.perDestinationConcurrency });
  const attempt = createAttemptRunner({
    ...deps,
    random: deps.random ?? Math.random,
    connections,
  });
  let keepAlive: ReturnType<typeof setInterval> | undefined;
  const seen = createSeenMark({
    jsm: deps.jsm,
    streams: deps.layout.streams(),
    nc: deps.nc,
    logger,
  });
  const gate = createJobGate();
  /** Hands a delivery to its lane, or, while another of the same job runs here, puts it back. */
  const submit = (d: Delivery) => {
    if (gate.enter(d.job)) lanes.submit(d);
    else d.msg.nak(Math.max(1_000, settings.timeoutMs));
  };
  const release = (d: Delivery) => gate.leave(d.job);
  const destinationOf = createDestinationCache();
  /** Deliveries being attempted; their messages get keep-alives with the waiting ones. */
  const attempting = new Set<Delivery>();

  const enqueue = async (d: Delivery, dueAt: number, deferrals: number) => {
    const entry: CallbackWakeup = {
      client_id: d.job.client_id,
      job_id: d.job.job_id,
      final_seq: d.finalSeq,
      due_at: new Date(dueAt).toISOString(),
      trigger: d.trigger,
      deferrals,
    };
    await publishCallbackWakeup(deps.js, entry);
  };

  const settle = async (d: Delivery, end: DeliveryEnd) => {
    if (end.kind === "retry") await enqueue(d, end.dueAt, 0);
    d.msg.ack();
  };

  /**
   * A delivery its lane cannot hold waits in the queue: about as long as the lane needs to work
   * off what it holds, and longer each time, so a dead receiver's backlog is not shuffled back
   * and forth.
   */
  const defer = (d: Delivery) => {
    const backoff = DEFER_BASE_MS * 2 ** d.deferrals;
    const waitMs = Math.min(Math.max(backoff, lanes.estimatedWaitMs(d.destination)), DEFER_MAX_MS);
    enqueue(d, nowMs() + waitMs, d.deferrals + 1)
      .then(
        () => d.msg.ack(),
        (err: unknown) => {
          logger.warn({ err: (err as Error).message }, "could not defer a callback; will retry");
          d.msg.nak(1_000);
        },
      )
      .finally(() => release(d));
  };

  const lanes = createLanes<Delivery>({
    concurrency: settings.concurrency,
    perDestination: settings.perDestinationConcurrency,
    maxWaitingPerDestination: settings.maxWaitingPerDestination,
    maxWaiting: settings.maxWaitingPerDestination * 8,
    run: async (d: Delivery) => {
      attempting.add(d);
      try {
        await settle(d, await attempt(d));
      } catch (err) {
        logger.error({ err: (err as Error).message }, "callback attempt failed; will retry");
        d.msg.nak(1_000);
      } finally {
        attempting.delete(d);
        release(d);
      }
    },
    overflow: defer,
  });

  /** Carries out a step decided from the `.cb` log; the delivery to run, if it is an attempt. */
  const applyStep = async (
    step: CallbackStep,
    d: Omit<Delivery, "attempt">,
  ): Promise<Delivery | undefined> => {
    switch (step.kind) {
      case "attempt":
        return { ...d, attempt: step.attempt };
      case "wait":
        await enqueue({ ...d, attempt: step.attempt }, nowMs() + step.delayMs, 0);
        d.msg.ack();
        return undefined;
      case "finish": {
        // 0.1 recorded an attempt and its outcome separately; a crash between them ends here.
        const event =
          step.outcome === "delivered"
            ? newEvent(deps, d.job, {
                type: "callback.delivered",
                data: { attempts: step.attempts },
              })
            : newEvent(deps, d.job, {
                type: "callback.failed",
                data: { attempts: step.attempts, reason: step.reason ?? "exhausted" },
              });
        const result = await appendEvent(deps, event, { expectedLastSubjectSeq: d.cbSeq });
        if (result.kind === "conflict") d.msg.nak(1_000);
        else d.msg.ack();
        return undefined;
      }
      case "settled":
        d.msg.ack();
        return undefined;
      default: {
        const unreachable: never = step;
        return unreachable;
      }
    }
  };

  /** Builds the delivery of a final event, reading `.cb` only when `fromLog` (not a first try). */
  const prepare = async (input: {
    readonly msg: JsMsg;
    readonly event: FinalEvent;
    readonly finalSeq: number;
    readonly trigger: DeliveryTrigger;
    readonly deferrals: number;
    readonly fromLog: boolean;
    /** The final event's trace context (a queue entry carries none of its own). */
    readonly traceparent?: string | undefined;
  }): Promise<Delivery | undefined> => {
    const { msg, event } = input;
    const run = await runSummaryOf(deps, event);
    if (run?.callback_url === undefined) {
      msg.ack();
      return undefined;
    }
    const traceparent = input.traceparent || headerOf(msg, TRACEPARENT_HEADER);
    const base = {
      job: completedJobOf(event, run),
      url: run.callback_url,
      destination: destinationOf(run.callback_url),
      trigger: input.trigger,
      finalSeq: input.finalSeq,
      msg,
      deferrals: input.deferrals,
      ...(traceparent ? { traceparent } : {}),
    };
    if (!input.fromLog) return { ...base, attempt: 1, cbSeq: 0 };
    const last = await readLastEvent(deps, event, "cb");
    const step = decideCallbackStep(input.trigger, last, nowMs());
    return applyStep(step, { ...base, cbSeq: last?.seq ?? 0 });
  };

  const onFinalEvent = async (msg: JsMsg): Promise<void> => {
    // Most `.job` events are not final: skip them on the header, without parsing the body.
    if (!isFinalEventType(headerOf(msg, EVENT_TYPE_HEADER) ?? "")) return msg.ack();
    const event = decodeEvent(msg.data);
    if (!isFinalEvent(event)) return msg.ack();
    const delivery = await prepare({
      msg,
      event,
      finalSeq: msg.seq,
      trigger: { kind: "original" },
      deferrals: 0,
      // A redelivered final event may have attempts recorded already, and so may one the
      // consumer delivers as new after nats-server restarted (repeats.ts).
      fromLog: msg.info.redelivered || seen.mayRepeat(msg.seq, deps.layout.partitionOf(event)),
    });
    if (delivery) submit(delivery);
  };

  const onQueueEntry = async (msg: JsMsg): Promise<void> => {
    const entry = decodeCallbackWakeup(msg.data);
    if (entry === undefined) {
      logger.error({ seq: msg.seq }, "invalid callback queue entry terminated");
      return terminate(msg);
    }
    const wait = Date.parse(entry.due_at) - nowMs();
    if (wait > SLACK_MS) return msg.nak(wait);
    const stored = await deps.jsm.streams.getMessage(deps.layout.streamOf(entry), {
      seq: entry.final_seq,
    });
    const event = stored === null ? undefined : decodeEvent(stored.data);
    if (event === undefined || !isFinalEvent(event) || event.job_id !== entry.job_id) {
      logger.error({ job_id: entry.job_id }, "callback queue entry without its final event");
      return terminate(msg);
    }
    const delivery = await prepare({
      msg,
      event,
      finalSeq: entry.final_seq,
      trigger: entry.trigger,
      deferrals: entry.deferrals,
      fromLog: true,
      traceparent: stored?.header.get(TRACEPARENT_HEADER),
    });
    if (delivery) submit(delivery);
  };

  /** Messages 0.1 parked in the callback consumer (retries waiting for their time). */
  const parkedHere = async (stream: string) => {
    try {
      const info = await deps.jsm.consumers.info(stream, TOPOLOGY.consumers.callback);
      return info.num_ack_pending;
    } catch {
      return 0;
    }
  };

  const pump = (messages: RecoveringConsume, handle: (msg: JsMsg) => Promise<void>) =>
    (async () => {
      for await (const msg of messages) {
        handle(msg).catch((err: unknown) => {
          if (err instanceof PoisonMessageError) {
            logger.error({ seq: msg.seq, reason: err.message }, "poison event terminated");
            terminate(msg);
            return;
          }
          logger.error(
            { seq: msg.seq, err: (err as Error).message },
            "callback step failed; will retry",
          );
          msg.nak(1_000);
        });
      }
    })();

  const consume = async (stream: string, name: string, handle: (msg: JsMsg) => Promise<void>) => {
    const consumer = await deps.js.consumers.get(stream, name);
    const messages = await consumeRecovering({
      consumer,
      nc: deps.nc,
      maxMessages: 512,
      restarted: logConsumeRestarts(logger, `${stream}/${name}`),
    });
    streams.push(messages);
    loops.push(pump(messages, handle));
  };

  return {
    async start() {
      await ensureScheduleStreams(deps.jsm, { replicas: deps.replicas ?? 1 });
      await seen.start();
      const waitingBound = settings.maxWaitingPerDestination * 8;
      for (let p = 0; p < deps.layout.partitions; p++) {
        const stream = deps.layout.stream(p);
        await ensureDurable(deps.jsm, {
          stream,
          name: TOPOLOGY.consumers.callback,
          filterSubject: deps.layout.filters.kind(p, "job"),
          ackWaitMs: ackWaitMs(settings),
          // Only first deliveries in lanes are held here; what waits longer is queued. A store
          // migrated from 0.1 may still hold retries parked here: room for those on top.
          maxAckPending: waitingBound + settings.concurrency + 1_024 + (await parkedHere(stream)),
        });
      }
      await ensureDurable(deps.jsm, {
        stream: CALLBACK_QUEUE_STREAM,
        name: CALLBACK_QUEUE_CONSUMER,
        filterSubject: `${CALLBACK_QUEUE_SUBJECT_ROOT}.>`,
        ackWaitMs: ackWaitMs(settings),
        // Parked retries (nak with their delay) count here, not against first deliveries.
        maxAckPending: settings.maxQueuedInFlight,
      });
      // Every replica consumes every partition's final events.
      for (const stream of deps.layout.streams()) {
        await consume(stream, TOPOLOGY.consumers.callback, onFinalEvent);
      }
      await consume(CALLBACK_QUEUE_STREAM, CALLBACK_QUEUE_CONSUMER, onQueueEntry);
      // Deliveries waiting for their lane or being attempted (a slow receiver) hold their
      // message: keep it from being redelivered. One timer for all, not one per attempt.
      keepAlive = setInterval(() => {
        for (const d of lanes.waiting()) d.msg.working();
        for (const d of attempting) d.msg.working();
      }, ackWaitMs(settings) / 3);
      logger.info(
        {
          concurrency: settings.concurrency,
          per_destination: settings.perDestinationConcurrency,
          timeout_ms: settings.timeoutMs,
          max_response_bytes: settings.maxResponseBytes,
        },
        "callback service started",
      );
      if (settings.concurrency > FETCH_REQUESTS_AT_ONCE) {
        logger.warn(
          { concurrency: settings.concurrency, fetch_requests_at_once: FETCH_REQUESTS_AT_ONCE },
          "callbacks.concurrency is above the requests Bun's fetch runs at once in one process; " +
            "unless BUN_CONFIG_MAX_HTTP_REQUESTS is set at least as high, attempts above it wait inside Bun while their timeout runs",
        );
      }
    },
    async stop() {
      await Promise.all(streams.map((m) => m.close()));
      await Promise.all(loops);
      // Deliveries still waiting for a lane go back to JetStream for the next process.
      for (const d of lanes.drain()) {
        release(d);
        d.msg.nak();
      }
      await lanes.idle();
      seen.stop();
      clearInterval(keepAlive);
      if (deps.connections === undefined) connections.close();
    },
  };
}
