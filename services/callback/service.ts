import type {
  ConsumerMessages,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from "@nats-io/jetstream";
import {
  appendEvent,
  decodeEvent,
  EVENT_TYPE_HEADER,
  ensureDurable,
  PoisonMessageError,
  readLastEvent,
  subjectFilters,
  TOPOLOGY,
  TRACEPARENT_HEADER,
} from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import type { ClientConfig } from "../../shared/config/index.ts";
import {
  type EventData,
  evolve,
  isFinal,
  type JobEvent,
  type JobView,
} from "../../shared/domain/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import {
  type ConnectionPool,
  createConnectionPool,
  deliverWebhook,
  type Resolver,
} from "../../shared/net/index.ts";
import { traceIdOf } from "../../shared/trace/index.ts";
import { webhookHeaders } from "../../shared/webhooks/index.ts";
import { TaskSet } from "../../shared/worker/index.ts";
import { buildCallbackBody, webhookIdFor } from "./payload.ts";
import { afterAttempt, type DeliveryTrigger, nextStep } from "./plan.ts";
import { ackWaitMs, type CallbackSettings, maxDeliveries, scheduleFor } from "./settings.ts";

/** Durable of the redelivery requests (filter sy.evt.*.*.cb); the main one is TOPOLOGY's "callback". */
export const REDELIVERY_DURABLE = "callback-redelivery";

const FINAL_TYPES: ReadonlySet<string> = new Set(["job.done", "job.error", "job.rejected"]);
const REDELIVERY_TYPE = "callback.redelivery_requested";

/**
 * Messages delivered and waiting for their next attempt count against max_ack_pending, so it
 * bounds how many callbacks can be in retry at once; above it new callbacks wait.
 */
const MAX_ACK_PENDING = 50_000;
/** Re-decide soon after a lost optimistic-concurrency race or a NATS error. */
const REDECIDE_DELAY_MS = 1_000;

export interface CallbackServiceDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly settings: CallbackSettings;
  /** The client's config; its secrets are read at every attempt, so each attempt signs with all active ones. */
  readonly client: (clientId: string) => ClientConfig | undefined;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** DNS for delivery-time checks; tests inject names that resolve to 127.0.0.1. */
  readonly resolver?: Resolver;
  /** Uniform [0, 1) for jitter. */
  readonly random?: () => number;
  readonly metrics?: Pick<HubMetrics, "callbackAttempts">;
  /** Keep-alive connections per checked destination; default: a pool owned by the service. */
  readonly connections?: ConnectionPool;
}

export interface CallbackService {
  start(): Promise<void>;
  /** Stops pulling; attempts in flight finish and are settled. */
  stop(): Promise<void>;
}

type CbType = "callback.attempted" | "callback.delivered" | "callback.failed";

/**
 * Delivers signed completion callbacks. Two durable pull consumers drive deliveries: `callback`
 * (final job events on `.job`) and `callback-redelivery` (operator requests on `.cb`). Every
 * attempt and outcome is appended to the job's `.cb` subject with the expected last subject
 * sequence, and the next step is decided from that log, so the retry schedule survives restarts:
 * a retry is a nak with the scheduled delay, never an in-memory timer.
 */
export function createCallbackService(deps: CallbackServiceDeps): CallbackService {
  const { logger, settings } = deps;
  const random = deps.random ?? Math.random;
  const maxDeliver = maxDeliveries(settings);
  const streams: ConsumerMessages[] = [];
  const running = new TaskSet();
  const nowMs = () => deps.clock.now().getTime();
  const connections = deps.connections ?? createConnectionPool();

  const cbEvent = <T extends CbType>(view: JobView, type: T, data: EventData<T>): JobEvent =>
    ({
      id: deps.ids.next("evt"),
      type,
      schema_version: 1,
      job_id: view.job_id,
      client_id: view.client_id,
      occurred_at: deps.clock.now().toISOString(),
      data,
    }) as JobEvent;

  const count = (outcome: "delivered" | "retry" | "failed" | "gone") =>
    deps.metrics?.callbackAttempts.inc({ outcome });

  /** Appends an outcome; false when another writer appended first (the caller re-decides). */
  const append = async (
    event: JobEvent,
    expected: number,
    traceparent?: string,
  ): Promise<number | undefined> => {
    const result = await appendEvent(deps.js, event, {
      expectedLastSubjectSeq: expected,
      ...(traceparent ? { traceparent } : {}),
    });
    return result.kind === "conflict" ? undefined : result.seq;
  };

  const deliver = async (
    msg: JsMsg,
    trigger: DeliveryTrigger,
    view: JobView,
    url: string,
  ): Promise<void> => {
    // The run's trace context, carried by the event that triggered this delivery.
    const traceparent = msg.headers?.get(TRACEPARENT_HEADER) || undefined;
    // Made on first use: a pino child (with redaction) per callback showed up in profiles, and
    // at the default level a delivered callback logs nothing.
    let child: Logger | undefined;
    const log = () =>
      (child ??= logger.child({
        job_id: view.job_id,
        client_id: view.client_id,
        ...(traceparent ? { trace_id: traceIdOf(traceparent) } : {}),
      }));
    const last = await readLastEvent(deps.jsm, view.client_id, view.job_id, "cb");
    const lastSeq = last?.seq ?? 0;
    const canRedeliver = msg.info.deliveryCount < maxDeliver;
    const step = nextStep(trigger, last, nowMs());
    const fail = async (attempts: number, reason: "exhausted" | "gone" | "refused") => {
      const seq = await append(
        cbEvent(view, "callback.failed", { attempts, reason }),
        lastSeq,
        traceparent,
      );
      if (seq === undefined) return msg.nak(REDECIDE_DELAY_MS);
      log().warn({ attempts, reason }, "callback failed");
      msg.ack();
    };

    if (step.kind === "settled") return msg.ack();
    if (step.kind === "finish") {
      if (step.outcome === "failed") return fail(step.attempts, step.reason ?? "exhausted");
      const seq = await append(
        cbEvent(view, "callback.delivered", { attempts: step.attempts }),
        lastSeq,
        traceparent,
      );
      return seq === undefined ? msg.nak(REDECIDE_DELAY_MS) : msg.ack();
    }
    if (step.kind === "wait") {
      // JetStream will not wake this message again: record the end instead of leaving it pending.
      if (!canRedeliver) return fail(attemptsOf(last), "exhausted");
      return msg.nak(step.delayMs);
    }

    const secrets = deps.client(view.client_id)?.callback_secrets ?? [];
    if (secrets.length === 0) {
      // Submit refuses callback_url without a secret; the secrets were removed since. Never send unsigned.
      log().warn("client has no callback secret any more; callback not sent");
      return fail(step.attempt - 1, "refused");
    }
    const body = buildCallbackBody(view);
    const headers: Record<string, string> = {
      ...webhookHeaders({
        id: webhookIdFor(view.job_id),
        timestamp: Math.floor(nowMs() / 1000),
        body,
        secrets,
      }),
      ...(traceparent ? { traceparent } : {}),
    };
    // Keep the message ours while the receiver is slow (ack_wait already exceeds the budget).
    const keepAlive = setInterval(() => msg.working(), Math.max(1_000, ackWaitMs(settings) / 3));
    const result = await deliverWebhook({
      url,
      body,
      headers,
      timeoutMs: settings.timeoutMs,
      ...settings.policy,
      ...(deps.resolver ? { resolver: deps.resolver } : {}),
      clock: nowMs,
      connections,
    }).finally(() => clearInterval(keepAlive));

    const base = trigger.kind === "redelivery" ? trigger.baseAttempts : 0;
    const outcome = afterAttempt(result, step.attempt - base - 1, {
      scheduleMs: scheduleFor(settings, view.client_id),
      jitter: settings.jitter,
      maxRetryAfterMs: settings.maxRetryAfterMs,
      random,
      canRedeliver,
    });
    const nextAt =
      outcome.kind === "retry" ? new Date(nowMs() + outcome.delayMs).toISOString() : undefined;
    const attempted = cbEvent(view, "callback.attempted", {
      attempt: step.attempt,
      duration_ms: result.durationMs,
      ...(result.status === undefined ? {} : { status_code: result.status }),
      ...(result.errorClass === undefined ? {} : { error_class: result.errorClass }),
      ...(nextAt === undefined ? {} : { next_attempt_at: nextAt }),
      ...(trigger.kind === "redelivery" ? { redelivery_seq: trigger.seq } : {}),
    });
    const attemptedSeq = await append(attempted, lastSeq, traceparent);
    if (logger.isLevelEnabled("info")) {
      log().info(
        {
          attempt: step.attempt,
          status: result.status,
          duration_ms: result.durationMs,
          error_class: result.errorClass,
          rule: result.rule,
          next_attempt_at: nextAt,
          recorded: attemptedSeq !== undefined,
        },
        "callback attempt",
      );
    }
    count(
      outcome.kind === "failed" && outcome.reason === "gone"
        ? "gone"
        : outcome.kind === "failed"
          ? "failed"
          : outcome.kind,
    );
    // Another delivery of this message recorded first; the receiver dedupes on webhook-id.
    if (attemptedSeq === undefined) return msg.nak(REDECIDE_DELAY_MS);
    if (outcome.kind === "retry") return msg.nak(outcome.delayMs);
    const final =
      outcome.kind === "delivered"
        ? cbEvent(view, "callback.delivered", { attempts: step.attempt })
        : cbEvent(view, "callback.failed", { attempts: step.attempt, reason: outcome.reason });
    const finalSeq = await append(final, attemptedSeq, traceparent);
    if (finalSeq === undefined) return msg.nak(REDECIDE_DELAY_MS);
    if (outcome.kind === "failed") log().warn({ reason: outcome.reason }, "callback failed");
    msg.ack();
  };

  /** The run request behind a job, when it asked for a callback. */
  const runWithCallback = async (clientId: string, jobId: string) => {
    const run = await readLastEvent(deps.jsm, clientId, jobId, "run");
    if (run?.event.type !== "run.requested" || run.event.data.callback_url === undefined) {
      return undefined;
    }
    return { run: run.event, url: run.event.data.callback_url };
  };

  const onFinalStatus = async (msg: JsMsg): Promise<void> => {
    // Most `.job` events are not final: skip them on the header, without parsing the body.
    if (!FINAL_TYPES.has(msg.headers?.get(EVENT_TYPE_HEADER) ?? "")) return msg.ack();
    const event = decodeEvent(msg.data);
    const found = await runWithCallback(event.client_id, event.job_id);
    if (!found) return msg.ack();
    const view = evolve(evolve(null, found.run), event);
    if (!view || !isFinal(view.status)) return msg.ack();
    await deliver(msg, { kind: "original" }, view, found.url);
  };

  const onRedeliveryRequest = async (msg: JsMsg): Promise<void> => {
    if (msg.headers?.get(EVENT_TYPE_HEADER) !== REDELIVERY_TYPE) return msg.ack();
    const event = decodeEvent(msg.data);
    if (event.type !== REDELIVERY_TYPE) return msg.ack();
    const found = await runWithCallback(event.client_id, event.job_id);
    const job = await readLastEvent(deps.jsm, event.client_id, event.job_id, "job");
    if (!found || !job) return msg.ack();
    const view = evolve(evolve(null, found.run), job.event);
    if (!view || !isFinal(view.status)) return msg.ack();
    const trigger = {
      kind: "redelivery",
      seq: msg.seq,
      baseAttempts: event.data.attempts,
    } as const;
    await deliver(msg, trigger, view, found.url);
  };

  const pump = (messages: ConsumerMessages, handle: (msg: JsMsg) => Promise<void>) => {
    void (async () => {
      for await (const msg of messages) {
        while (running.size >= settings.concurrency) await running.freed();
        running.add(
          handle(msg).catch((err: unknown) => {
            if (err instanceof PoisonMessageError) {
              logger.error({ seq: msg.seq, reason: err.message }, "poison event terminated");
              msg.term(err.message);
              return;
            }
            logger.error(
              { seq: msg.seq, err: (err as Error).message },
              "callback step failed; will retry",
            );
            msg.nak(REDECIDE_DELAY_MS);
          }),
        );
      }
    })();
  };

  return {
    async start() {
      const common = { ackWaitMs: ackWaitMs(settings), maxAckPending: MAX_ACK_PENDING, maxDeliver };
      await ensureDurable(deps.jsm, {
        name: TOPOLOGY.consumers.callback,
        filterSubject: subjectFilters.kind("job"),
        ...common,
      });
      await ensureDurable(deps.jsm, {
        name: REDELIVERY_DURABLE,
        filterSubject: subjectFilters.kind("cb"),
        ...common,
      });
      for (const [name, handle] of [
        [TOPOLOGY.consumers.callback, onFinalStatus],
        [REDELIVERY_DURABLE, onRedeliveryRequest],
      ] as const) {
        const consumer = await deps.js.consumers.get(TOPOLOGY.eventsStream, name);
        const messages = await consumer.consume({ max_messages: settings.concurrency });
        streams.push(messages);
        pump(messages, handle);
      }
      logger.info(
        {
          max_deliver: maxDeliver,
          ack_wait_ms: ackWaitMs(settings),
          timeout_ms: settings.timeoutMs,
        },
        "callback service started",
      );
    },
    async stop() {
      await Promise.all(streams.map((m) => m.close()));
      await running.settled();
      if (deps.connections === undefined) connections.close();
    },
  };
}

/** The attempt count recorded by the last `.cb` event (0 when there is none). */
function attemptsOf(last: { event: JobEvent } | null): number {
  if (!last) return 0;
  const { event } = last;
  if (event.type === "callback.attempted") return event.data.attempt;
  if (
    event.type === "callback.delivered" ||
    event.type === "callback.failed" ||
    event.type === "callback.redelivery_requested"
  ) {
    return event.data.attempts;
  }
  return 0;
}
