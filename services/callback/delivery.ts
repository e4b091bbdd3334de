import type { JetStreamClient, JsMsg } from "@nats-io/jetstream";
import { type Clock, parseIsoMs } from "../../shared/clock/index.ts";
import type { ClientConfig } from "../../shared/config/index.ts";
import {
  type AttemptRecord,
  afterAttempt,
  type DeliveryTrigger,
  recordAttempt,
} from "../../shared/domain/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import { appendEvent, type EventLayout, newEvent } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import {
  type ConnectionPool,
  createEgressChecker,
  deliverWebhook,
  type Resolver,
} from "../../shared/net/index.ts";
import { NO_TRACING, type TraceSpan, type Tracing } from "../../shared/telemetry/index.ts";
import { traceIdOf } from "../../shared/trace/index.ts";
import { createWebhookSigner } from "../../shared/webhooks/index.ts";
import type { LaneItem } from "./lanes.ts";
import { buildCallbackBody, type CompletedJob, webhookIdFor } from "./payload.ts";
import { type CallbackSettings, scheduleFor } from "./settings.ts";

/** One callback attempt to make, and the message that holds it until the outcome is stored. */
export interface Delivery extends LaneItem {
  readonly job: CompletedJob;
  readonly url: string;
  readonly trigger: DeliveryTrigger;
  readonly attempt: number;
  /** The `.cb` subject's sequence this attempt's record must follow (0: nothing recorded yet). */
  readonly cbSeq: number;
  /** Stream sequence of the job's final event (what a queued retry reads back). */
  readonly finalSeq: number;
  readonly traceparent?: string;
  /** The message to settle: a final status event, or a queue entry. */
  readonly msg: JsMsg;
  readonly deferrals: number;
}

/** What the attempt came to, for the caller to settle its message. */
export type DeliveryEnd =
  | { readonly kind: "settled" }
  | { readonly kind: "retry"; readonly dueAt: number; readonly cbSeq: number }
  /** Another writer recorded first (a duplicate delivery): it owns the next step. */
  | { readonly kind: "superseded" };

export interface AttemptRunnerDeps {
  readonly js: JetStreamClient;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
  readonly settings: CallbackSettings;
  readonly client: (clientId: string) => ClientConfig | undefined;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly random: () => number;
  readonly connections: ConnectionPool;
  readonly resolver?: Resolver;
  readonly metrics?: Pick<HubMetrics, "callbackAttempts" | "callbackLatency">;
  /** A `callback` span per attempt (docs/operations.md, "Traces"). */
  readonly tracing?: Tracing;
}

/** One attempt's span, continuing the job's trace (docs/operations.md, "Traces"). */
function attemptSpan(tracing: Tracing, d: Delivery): TraceSpan {
  const { job_id, client_id, route } = d.job;
  return tracing.start("callback", {
    parent: d.traceparent,
    kind: "client",
    attributes: { job_id, client_id, route, attempt: d.attempt },
  });
}

/** Run accepted → callback settled, per route; an operator's redelivery is not the run's latency. */
function observeSettled(
  deps: Pick<AttemptRunnerDeps, "metrics">,
  d: Delivery,
  outcome: "delivered" | "failed",
  nowMs: number,
): void {
  if (d.trigger.kind !== "original" || !deps.metrics) return;
  const seconds = (nowMs - parseIsoMs(d.job.created_at)) / 1000;
  if (seconds >= 0) deps.metrics.callbackLatency.observe({ route: d.job.route, outcome }, seconds);
}

/**
 * Makes one attempt and records it as one `.cb` event (the domain's recordAttempt): a delivery is
 * `callback.delivered` carrying the attempt's status and duration, a final failure
 * `callback.failed`, a failure with a retry `callback.attempted` with next_attempt_at. The record
 * is appended with the `.cb` subject's expected sequence, so two deliveries of the same job cannot
 * both record one.
 */
export function createAttemptRunner(deps: AttemptRunnerDeps) {
  const { settings } = deps;
  const nowMs = () => deps.clock.now().getTime();
  // Made once for every attempt: the URL and address checks of the policy (DNS is still resolved
  // at each attempt) and the parsed signing keys.
  const checker = createEgressChecker(settings.policy);
  const sign = createWebhookSigner();

  const append = async (d: Delivery, record: AttemptRecord): Promise<number | undefined> => {
    const event = newEvent(deps, d.job, record);
    const result = await appendEvent(deps, event, {
      expectedLastSubjectSeq: d.cbSeq,
      ...(d.traceparent ? { traceparent: d.traceparent } : {}),
    });
    return result.kind === "conflict" ? undefined : result.seq;
  };

  const log = (d: Delivery) =>
    deps.logger.child({
      job_id: d.job.job_id,
      client_id: d.job.client_id,
      ...(d.traceparent ? { trace_id: traceIdOf(d.traceparent) } : {}),
    });

  /** Records a callback that cannot be sent (the client has no secret any more). */
  const refuse = async (d: Delivery): Promise<DeliveryEnd> => {
    log(d).warn("client has no callback secret any more; callback not sent");
    const seq = await append(d, {
      type: "callback.failed",
      data: { attempts: d.attempt - 1, reason: "refused" },
    });
    return seq === undefined ? { kind: "superseded" } : { kind: "settled" };
  };

  return async function attempt(d: Delivery): Promise<DeliveryEnd> {
    const secrets = deps.client(d.job.client_id)?.callback_secrets ?? [];
    // Submit refuses callback_url without a secret; the secrets were removed since. Never unsigned.
    if (secrets.length === 0) return refuse(d);
    const body = buildCallbackBody(d.job);
    const span = attemptSpan(deps.tracing ?? NO_TRACING, d);
    const traceparent = span.traceparent ?? d.traceparent;
    const headers: Record<string, string> = sign({
      id: webhookIdFor(d.job.job_id),
      timestamp: Math.floor(nowMs() / 1000),
      body,
      secrets,
    });
    if (traceparent) headers.traceparent = traceparent;
    // The service keeps the message ours while the receiver is slow (one timer for every attempt).
    const result = await deliverWebhook({
      url: d.url,
      body,
      headers,
      timeoutMs: settings.timeoutMs,
      maxResponseBytes: settings.maxResponseBytes,
      checker,
      ...(deps.resolver ? { resolver: deps.resolver } : {}),
      clock: nowMs,
      connections: deps.connections,
    }).catch((err: unknown) => {
      span.end(err);
      throw err;
    });
    const base = d.trigger.kind === "redelivery" ? d.trigger.baseAttempts : 0;
    const outcome = afterAttempt(result, d.attempt - base - 1, {
      scheduleMs: scheduleFor(settings, d.job.client_id),
      jitter: settings.jitter,
      maxRetryAfterMs: settings.maxRetryAfterMs,
      random: deps.random,
    });
    span.set({ outcome: outcome.kind, "http.response.status_code": result.status });
    span.end(result.ok ? undefined : (result.errorClass ?? "failed"));
    const now = nowMs();
    const record = recordAttempt({
      attempt: d.attempt,
      result,
      outcome,
      trigger: d.trigger,
      nowMs: now,
    });
    const seq = await append(d, record);
    deps.metrics?.callbackAttempts.inc({
      outcome: outcome.kind === "failed" && outcome.reason === "gone" ? "gone" : outcome.kind,
    });
    if (seq !== undefined && outcome.kind !== "retry") observeSettled(deps, d, outcome.kind, now);
    if (seq === undefined || deps.logger.isLevelEnabled("info") || outcome.kind === "failed") {
      const fields = {
        attempt: d.attempt,
        status: result.status,
        duration_ms: result.durationMs,
        error_class: result.errorClass,
        rule: result.rule,
        outcome: outcome.kind,
        recorded: seq !== undefined,
      };
      if (outcome.kind === "failed") log(d).warn(fields, "callback failed");
      else log(d).info(fields, "callback attempt");
    }
    if (seq === undefined) return { kind: "superseded" };
    if (outcome.kind === "retry")
      return { kind: "retry", dueAt: now + outcome.delayMs, cbSeq: seq };
    return { kind: "settled" };
  };
}
