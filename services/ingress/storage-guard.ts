import type { JetStreamManager } from "@nats-io/jetstream";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import { StorageFullError } from "../../shared/errors/index.ts";

/** The share of events_max_bytes kept for the events of accepted jobs: new runs stop below it. */
export const EVENTS_RESERVE_FRACTION = 0.1;
/** How old the stream's state may be before a POST reads it again. */
const REFRESH_MS = 1_000;

export interface StorageGuard {
  /** False once the events stream has reached the share new runs may use. */
  admits(): Promise<boolean>;
  /** The stream sequence of an event this process stored: the stream has grown up to it. */
  stored(seq: number): void;
}

interface StreamState {
  readonly bytes: number;
  readonly messages: number;
  readonly lastSeq: number;
  readonly readAtMs: number;
}

/**
 * Keeps headroom in the events stream for jobs already accepted: new runs are refused (503
 * storage_full) once the stream holds `maxBytes` less the reserve, so the status, callback and
 * audit events of accepted jobs still fit, and no run is accepted into a stream at its limit. The
 * stream's size comes from its own state, read at most once a second, plus what it has grown
 * since: the sequences of this process's acks past the state's last sequence, each at the
 * stream's mean stored size (every writer's events count, not only this process's).
 */
export function createStorageGuard(deps: {
  readonly jsm: JetStreamManager;
  /** events_max_bytes; -1 or 0: no limit, nothing is checked. */
  readonly maxBytes: number;
  readonly clock: Clock;
}): StorageGuard {
  if (deps.maxBytes <= 0) return { admits: async () => true, stored: () => {} };
  const runsLimit = deps.maxBytes - Math.ceil(deps.maxBytes * EVENTS_RESERVE_FRACTION);
  let state: StreamState | undefined;
  let latestSeq = 0;
  let reading: Promise<StreamState> | undefined;

  const read = () => {
    reading ??= deps.jsm.streams
      .info(TOPOLOGY.eventsStream)
      .then((info) => {
        state = {
          bytes: info.state.bytes,
          messages: info.state.messages,
          lastSeq: info.state.last_seq,
          readAtMs: deps.clock.now().getTime(),
        };
        return state;
      })
      .finally(() => {
        reading = undefined;
      });
    return reading;
  };

  const estimate = (s: StreamState) => {
    const grown = Math.max(0, latestSeq - s.lastSeq);
    const meanBytes = s.messages > 0 ? s.bytes / s.messages : 0;
    return s.bytes + grown * meanBytes;
  };

  return {
    async admits() {
      // Growth is estimated at the stream's mean message size: the state of an empty stream has
      // none, so it is read again as soon as the stream has grown.
      const current =
        state !== undefined &&
        deps.clock.now().getTime() - state.readAtMs < REFRESH_MS &&
        (state.messages > 0 || latestSeq <= state.lastSeq)
          ? state
          : await read();
      return estimate(current) < runsLimit;
    },
    stored(seq) {
      if (seq > latestSeq) latestSeq = seq;
    },
  };
}

/** The answer to a run refused for want of room (the same as a publish the stream refused). */
export function storageFull(): StorageFullError {
  return new StorageFullError({
    detail:
      "The event store is full; the run was not accepted. Retry later with the same request_id.",
    headers: { "retry-after": "2" },
  });
}
