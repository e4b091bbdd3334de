import { JetStreamApiError } from "@nats-io/jetstream";
import {
  ClosedConnectionError,
  DrainingConnectionError,
  NoRespondersError,
  RequestError,
  TimeoutError,
} from "@nats-io/transport-node";
import { StorageFullError, type SwitchyardError, UnavailableError } from "../errors/index.ts";

/** JetStream error codes that mean "no room": stream limits (discard new) or account limits. */
const STORAGE_FULL_CODES = new Set([10023, 10026, 10027, 10028, 10047]);

/**
 * True when the error, or one it wraps, is a connection-level NATS failure. During a leader
 * election a cluster answers "no responders", which nats.js wraps in a JetStreamNotEnabled error
 * (not exported); the wrapped RequestError is what identifies it.
 */
function isTransient(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (
      e instanceof TimeoutError ||
      e instanceof NoRespondersError ||
      e instanceof ClosedConnectionError ||
      e instanceof DrainingConnectionError ||
      e instanceof RequestError
    ) {
      return true;
    }
  }
  return false;
}

/**
 * Turns a NATS failure into the hub's typed error: storage full, or unavailable (a timeout, no
 * responders, a closed or draining connection). Both mean "not persisted": the caller may retry
 * with the same request_id. Returns undefined for errors that are not about availability.
 */
export function classifyNatsError(err: unknown, retryAfterSec = 2): SwitchyardError | undefined {
  const headers = { "retry-after": String(retryAfterSec) };
  if (err instanceof JetStreamApiError) {
    const text = err.message.toLowerCase();
    if (
      STORAGE_FULL_CODES.has(err.code) ||
      (err.code === 10077 && /maximum (bytes|messages)|insufficient|no space/.test(text))
    ) {
      return new StorageFullError({
        detail:
          "The event store is full; the run was not accepted. Retry later with the same request_id.",
        headers,
        cause: err,
      });
    }
    if (err.code === 10008 || err.code === 10077) {
      return new UnavailableError({
        detail: "JetStream could not store the event; the run was not accepted.",
        headers,
        cause: err,
      });
    }
    return undefined;
  }
  if (isTransient(err)) {
    return new UnavailableError({
      detail:
        "The event store is not reachable; nothing was persisted. Retry with the same request_id.",
      headers,
      cause: err,
    });
  }
  return undefined;
}
