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
  if (
    err instanceof TimeoutError ||
    err instanceof NoRespondersError ||
    err instanceof ClosedConnectionError ||
    err instanceof DrainingConnectionError ||
    err instanceof RequestError
  ) {
    return new UnavailableError({
      detail:
        "The event store is not reachable; nothing was persisted. Retry with the same request_id.",
      headers,
      cause: err,
    });
  }
  return undefined;
}
