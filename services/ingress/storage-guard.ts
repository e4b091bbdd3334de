import type { JetStreamManager } from "@nats-io/jetstream";
import type { Clock } from "../../shared/clock/index.ts";
import { StorageFullError } from "../../shared/errors/index.ts";
import type { EventLayout } from "../../shared/jobs/index.ts";

/** The share of events_max_bytes kept for the events of accepted jobs: new runs stop below it. */
export const EVENTS_RESERVE_FRACTION = 0.1;
/** How old the stream's state may be, far from the limit or once refusing, before it is read again. */
const REFRESH_MS = 1_000;

export interface StorageGuard {
  /**
   * Whether a run of about `runBytes` may be stored: false once the events stream (with the runs
   * this process is storing) would pass the share new runs may use. Call done() after the publish.
   */
  admits(runBytes: number): Promise<boolean>;
  /** After an admitted run's publish, stored or not; `seq` is its ack's stream sequence. */
  done(runBytes: number, seq?: number): void;
}

interface StreamState {
  readonly bytes: number;
  readonly messages: number;
  readonly lastSeq: number;
  readonly readAtMs: number;
}

/**
 * Keeps headroom in the events stream for jobs already accepted: new runs are refused (503
 * storage_full) once the stream would hold `maxBytes` less the reserve, so the status, callback
 * and audit events of accepted jobs still fit, and no run is stored into a stream at its limit.
 * The size comes from the stream's own state. Far from the limit a state up to a second old is
 * used, plus what the stream has grown since: the sequences of this process's acks past the
 * state's last one, each at the stream's mean stored size (every writer's events count). Within
 * the reserve's width of the limit every run reads the state (one read shared by the runs that
 * arrive while it runs), and the runs this process is still storing count too.
 */
export function createStorageGuard(deps: {
  readonly jsm: JetStreamManager;
  /** events_max_bytes; -1 or 0: no limit, nothing is checked. */
  readonly maxBytes: number;
  readonly clock: Clock;
  readonly layout: EventLayout;
}): StorageGuard {
  if (deps.maxBytes <= 0) return { admits: async () => true, done: () => {} };
  const reserve = Math.ceil(deps.maxBytes * EVENTS_RESERVE_FRACTION);
  const partitioned = deps.layout.partitions > 1;
  const runsLimit = deps.maxBytes - reserve;
  let state: StreamState | undefined;
  let latestSeq = 0;
  /** Runs admitted here whose publish has not returned. */
  let storing = 0;
  let reading: Promise<StreamState> | undefined;

  const read = () => {
    // events_max_bytes bounds each partition's stream: the fullest one decides.
    reading ??= Promise.all(deps.layout.streams().map((name) => deps.jsm.streams.info(name)))
      .then((infos) => {
        const info = infos.reduce((a, b) => (b.state.bytes > a.state.bytes ? b : a));
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
    return s.bytes + grown * meanBytes + storing;
  };

  /** A state good enough to decide on without reading the stream again. */
  const usable = (s: StreamState | undefined, runBytes: number): s is StreamState => {
    if (s === undefined || deps.clock.now().getTime() - s.readAtMs >= REFRESH_MS) return false;
    // The mean of an empty stream says nothing about its growth.
    if (s.messages === 0 && latestSeq > s.lastSeq) return false;
    const total = estimate(s) + runBytes;
    // Refusing: a full stream empties only by expiry or a raised limit; far from it: estimate.
    return total >= runsLimit ? latestSeq <= s.lastSeq : total < runsLimit - reserve;
  };

  return {
    async admits(runBytes) {
      const current = usable(state, runBytes) ? state : await read();
      if (current === undefined || estimate(current) + runBytes >= runsLimit) return false;
      storing += runBytes;
      return true;
    },
    done(runBytes, seq) {
      storing = Math.max(0, storing - runBytes);
      // Sequences of different partitions' streams do not compare: with several, the estimate
      // grows by the runs in flight only, and each read refreshes it.
      if (seq !== undefined && seq > latestSeq && !partitioned) latestSeq = seq;
    },
  };
}

/** A run.requested's record beside its input, metadata and callback_url: ids, fingerprint, headers. */
const RUN_RECORD_BYTES = 640;

/** About what a run's event takes in the stream: enough to keep two runs from both taking the last room. */
export function storedRunBytes(request: {
  readonly input: string;
  readonly metadata?: unknown;
  readonly callback_url?: string;
}): number {
  return (
    RUN_RECORD_BYTES +
    Buffer.byteLength(request.input) +
    (request.metadata === undefined ? 0 : Buffer.byteLength(JSON.stringify(request.metadata))) +
    (request.callback_url?.length ?? 0)
  );
}

/** The answer to a run refused for want of room (the same as a publish the stream refused). */
export function storageFull(): StorageFullError {
  return new StorageFullError({
    detail:
      "The event store is full; the run was not accepted. Retry later with the same request_id.",
    headers: { "retry-after": "2" },
  });
}
