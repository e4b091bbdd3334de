import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../../shared/log/index.ts";
import { stopStatusIterator } from "../../shared/nats/index.ts";

/** How long a failed read of the stream's last sequence waits before the next try. */
const RETRY_MS = 1_000;

export interface SeenMark {
  /**
   * Whether a first delivery of this final event may still repeat one made before: true for every
   * event the stream held when this process last (re)connected, and for all while disconnected or
   * before that read returned.
   */
  mayRepeat(streamSeq: number, partition: number): boolean;
  start(): Promise<void>;
  stop(): void;
}

/**
 * The `callback` consumer's delivery count cannot tell a repeat after nats-server itself
 * restarted: 2.9 writes a file consumer's state (deliveries and acks) at most every 100 ms
 * (server/filestore.go, consumerFileStore.flushLoop), so a kill loses the last of it and the
 * server delivers those events again as first deliveries, even ones whose callback was delivered,
 * recorded and acked. Every server restart drops this process's connection, so an event stored
 * after the reconnect cannot have been delivered before it: only events at or below the stream's
 * last sequence read at (re)connect may repeat, and those are decided from the job's `.cb` log.
 */
export function createSeenMark(deps: {
  readonly jsm: JetStreamManager;
  /** Every partition's events stream, in partition order. */
  readonly streams: readonly string[];
  /** The connection whose disconnects and reconnects move the mark. */
  readonly nc: Pick<NatsConnection, "status">;
  readonly logger: Logger;
}): SeenMark {
  /** Per partition: the stream's last sequence at the last (re)connect. */
  let marks: number[] = [];
  /** Bumped on every disconnect: a read begun before one must not lower the mark after it. */
  let epoch = 0;
  let stopped = false;
  const status = deps.nc.status();

  const read = async (): Promise<void> => {
    const started = epoch;
    while (!stopped && started === epoch) {
      try {
        const infos = await Promise.all(deps.streams.map((s) => deps.jsm.streams.info(s)));
        if (started === epoch) marks = infos.map((info) => info.state.last_seq);
        return;
      } catch (err) {
        deps.logger.warn(
          { err: (err as Error).message },
          "cannot read the events stream's last sequence; every callback is checked against its log",
        );
        await Bun.sleep(RETRY_MS);
      }
    }
  };

  const watch = async () => {
    for await (const s of status) {
      if (s.type === "disconnect") {
        epoch++;
        marks = [];
      } else if (s.type === "reconnect") {
        void read();
      }
    }
  };

  return {
    mayRepeat: (streamSeq, partition) =>
      streamSeq <= (marks[partition] ?? Number.POSITIVE_INFINITY),
    async start() {
      void watch();
      await read();
    },
    stop() {
      stopped = true;
      stopStatusIterator(status);
    },
  };
}

/**
 * The jobs with a delivery in this process (waiting in a lane or being attempted). A second one
 * for the same job (its final event delivered again after nats-server restarted, while the first
 * is still in flight) is put back until the first is recorded, and then decided from the `.cb`
 * log: one process never runs two attempts of one job at once.
 */
export function createJobGate() {
  const inFlight = new Set<string>();
  const keyOf = (job: { readonly client_id: string; readonly job_id: string }) =>
    `${job.client_id}.${job.job_id}`;
  return {
    /** False when a delivery of this job is in flight here already. */
    enter(job: { readonly client_id: string; readonly job_id: string }): boolean {
      const key = keyOf(job);
      if (inFlight.has(key)) return false;
      inFlight.add(key);
      return true;
    },
    leave(job: { readonly client_id: string; readonly job_id: string }): void {
      inFlight.delete(keyOf(job));
    },
  };
}
