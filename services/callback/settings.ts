import { callbackEgressPolicy } from "../../shared/callbacks/index.ts";
import { type Config, parseDuration } from "../../shared/config/index.ts";
import type { EgressPolicy } from "../../shared/net/index.ts";

/** The callback settings a running service uses, parsed once from the config. */
export interface CallbackSettings {
  readonly policy: EgressPolicy;
  /** Budget of one attempt (DNS, connect, TLS, request, response). */
  readonly timeoutMs: number;
  /** Default delays before each retry; the first attempt is immediate. */
  readonly scheduleMs: readonly number[];
  /** Per-client schedules (clients[].callback_retry_schedule). */
  readonly clientScheduleMs: ReadonlyMap<string, readonly number[]>;
  /** ±fraction applied to every scheduled delay, so receivers are not hit in lock-step. */
  readonly jitter: number;
  /** Upper bound on a receiver's Retry-After. */
  readonly maxRetryAfterMs: number;
  readonly concurrency: number;
}

/** Parses the `callbacks` section and the clients' retry schedules. */
export function callbackSettings(config: Config): CallbackSettings {
  const { callbacks } = config;
  const clientScheduleMs = new Map<string, readonly number[]>();
  for (const client of config.clients) {
    if (client.callback_retry_schedule) {
      clientScheduleMs.set(client.id, client.callback_retry_schedule.map(parseDuration));
    }
  }
  return {
    policy: callbackEgressPolicy(callbacks),
    timeoutMs: parseDuration(callbacks.timeout),
    scheduleMs: callbacks.retry_schedule.map(parseDuration),
    clientScheduleMs,
    jitter: callbacks.jitter,
    maxRetryAfterMs: parseDuration(callbacks.max_retry_after),
    concurrency: callbacks.concurrency,
  };
}

/** The retry delays that apply to a client's callbacks. */
export function scheduleFor(settings: CallbackSettings, clientId: string): readonly number[] {
  return settings.clientScheduleMs.get(clientId) ?? settings.scheduleMs;
}

/**
 * Consumer max_deliver: above the longest schedule (1 + retries) with room for redeliveries that
 * are not attempts (a crash before the ack, a NATS restart that wakes a delayed message early, a
 * transient NATS error). Attempt numbers come from the event log, so this is only the poison bound.
 */
export function maxDeliveries(settings: CallbackSettings): number {
  const longest = Math.max(
    settings.scheduleMs.length,
    ...[...settings.clientScheduleMs.values()].map((s) => s.length),
  );
  return 2 * (longest + 1) + 10;
}

/** Consumer ack_wait: well above one attempt, so a slow receiver never causes a parallel redelivery. */
export function ackWaitMs(settings: CallbackSettings): number {
  return Math.max(30_000, settings.timeoutMs * 2);
}
