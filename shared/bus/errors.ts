import { JetStreamApiError } from "@nats-io/jetstream";
import {
  ClosedConnectionError,
  DrainingConnectionError,
  NoRespondersError,
  RequestError,
  TimeoutError,
} from "@nats-io/transport-node";
import { StorageFullError, SwitchyardError, UnavailableError } from "../errors/index.ts";
import { isJsError } from "./js-errors.ts";

/** JetStream errors that mean "no room": stream limits (discard new) or account limits. */
const STORAGE_FULL = [
  "insufficientResources",
  "memoryResourcesExceeded",
  "storageResourcesExceeded",
  "maximumMessagesExceeded",
  "streamLimitsExceeded",
] as const;

/** True when the error or one it wraps (five deep at most) passes `test`. */
function someCause(err: unknown, test: (e: Error) => boolean): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (test(e)) return true;
  }
  return false;
}

/**
 * True when the error, or one it wraps, is a connection-level NATS failure. During a leader
 * election a cluster answers "no responders", which nats.js wraps in a JetStreamNotEnabled error
 * (not exported); the wrapped RequestError is what identifies it.
 */
function isTransient(err: unknown): boolean {
  return someCause(
    err,
    (e) =>
      e instanceof TimeoutError ||
      e instanceof NoRespondersError ||
      e instanceof ClosedConnectionError ||
      e instanceof DrainingConnectionError ||
      e instanceof RequestError,
  );
}

/** True when the error, or one it wraps, is NATS's "no responders": nothing listens on the subject. */
export function isNoResponders(err: unknown): boolean {
  return someCause(err, (e) => e instanceof NoRespondersError);
}

/**
 * Throws 503 `unavailable` (Retry-After 2) at once while NATS is known to be away, so a handler
 * does not wait for nats.js's request timeout to learn what the connection status already says.
 */
export function requireConnected(connected: () => boolean, detail: string): void {
  if (!connected()) throw new UnavailableError({ detail, headers: { "retry-after": "2" } });
}

/**
 * What an HTTP edge answers for a thrown value: the hub's own errors as they are, a NATS failure
 * as its typed error (503), anything else unchanged (a 500). Used where errors become problem+json.
 */
export function asAnswerable(err: unknown): unknown {
  return err instanceof SwitchyardError ? err : (classifyNatsError(err) ?? err);
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
    const status = err.status;
    if (
      isJsError(err, ...STORAGE_FULL) ||
      // 2.9 reports a full stream as a generic store failure (10077) whose text names the limit;
      // no dedicated code exists there, so the text is the only signal.
      (isJsError(err, "storeFailed") && /maximum (bytes|messages)|insufficient|no space/.test(text))
    ) {
      return new StorageFullError({
        detail:
          "The event store is full; the run was not accepted. Retry later with the same request_id.",
        headers,
        cause: err,
      });
    }
    if (
      // A stream leader that cannot propose the write (it lost leadership, or its raft node is
      // closing) answers status 503 with no err_code in 2.9 (processClusteredInboundMsg); 503 is
      // the server saying "not stored, try again".
      status === 503 ||
      isJsError(
        err,
        "clusterNotAvailable",
        "storeFailed",
        "streamSequenceNotMatch",
        "clusterNotLeader",
      )
    ) {
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
