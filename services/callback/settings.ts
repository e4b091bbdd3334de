import { callbackEgressPolicy } from "../../shared/callbacks/index.ts";
import { type Config, parseDuration } from "../../shared/config/index.ts";
import type { EgressPolicy } from "../../shared/net/index.ts";

/** The callback settings a running service uses, parsed once from the config. */
export interface CallbackSettings {
  readonly policy: EgressPolicy;
  /** Budget of one attempt (DNS, connect, TLS, request, response). */
  readonly timeoutMs: number;
  /** Receiver answer body bytes read (and discarded) at most (callbacks.max_response_bytes). */
  readonly maxResponseBytes: number;
  /** Default delays before each retry; the first attempt is immediate. */
  readonly scheduleMs: readonly number[];
  /** Per-client schedules (clients[].callback_retry_schedule). */
  readonly clientScheduleMs: ReadonlyMap<string, readonly number[]>;
  /** ±fraction applied to every scheduled delay, so receivers are not hit in lock-step. */
  readonly jitter: number;
  /** Upper bound on a receiver's Retry-After. */
  readonly maxRetryAfterMs: number;
  /** Attempts in flight at once over every destination. */
  readonly concurrency: number;
  /** Attempts in flight at once to one destination (scheme, host, port). */
  readonly perDestinationConcurrency: number;
  /** Deliveries one destination may hold waiting in memory before they wait in the queue. */
  readonly maxWaitingPerDestination: number;
  /** Queued deliveries (retries, deferrals) parked in the queue consumer at once. */
  readonly maxQueuedInFlight: number;
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
    maxResponseBytes: callbacks.max_response_bytes,
    scheduleMs: callbacks.retry_schedule.map(parseDuration),
    clientScheduleMs,
    jitter: callbacks.jitter,
    maxRetryAfterMs: parseDuration(callbacks.max_retry_after),
    concurrency: callbacks.concurrency,
    perDestinationConcurrency: Math.min(
      callbacks.per_destination_concurrency,
      callbacks.concurrency,
    ),
    maxWaitingPerDestination: callbacks.max_waiting_per_destination,
    maxQueuedInFlight: 100_000,
  };
}

/** The retry delays that apply to a client's callbacks. */
export function scheduleFor(settings: CallbackSettings, clientId: string): readonly number[] {
  return settings.clientScheduleMs.get(clientId) ?? settings.scheduleMs;
}

/** Consumer ack_wait: well above one attempt, so a slow receiver never causes a parallel redelivery. */
export function ackWaitMs(settings: CallbackSettings): number {
  return Math.max(30_000, settings.timeoutMs * 2);
}
