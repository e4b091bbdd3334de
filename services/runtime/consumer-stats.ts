import type { ConsumerInfo, JetStreamManager } from "@nats-io/jetstream";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import type { EventLayout } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { CALLBACK_QUEUE_STREAM, DEADLINE_STREAM } from "../../shared/schedule/index.ts";
import { TASK_STREAM } from "../../shared/worker/index.ts";
import { INDEX_CONSUMER } from "../indexer/index.ts";
import { createSharedRead } from "./shared-read.ts";

/** The work queues whose durable consumers hold work (besides every partition's events stream). */
export const WORK_QUEUE_STREAMS = [TASK_STREAM, DEADLINE_STREAM, CALLBACK_QUEUE_STREAM] as const;

/** Streams the hub owns: its own and its KV buckets' and object stores'. */
const HUB_STREAM = /^(SWITCHYARD_|KV_sy_|OBJ_sy_)/;

/** A scrape waits this long for JetStream, then is answered with the gauges it already has. */
const READ_TIMEOUT_MS = 3_000;

export interface ConsumerStats {
  /**
   * Reads JetStream into the gauges, for a scrape: one read at a time, shared by the scrapes that
   * arrive while it runs. Never rejects; a read that takes longer than the timeout (3 s) leaves
   * the scrape with the last values (the read goes on and updates them).
   */
  refresh(): Promise<void>;
}

/**
 * Reads JetStream into gauges when /metrics is scraped: every durable consumer of the work
 * streams (pending, ack pending, redelivered), the size and limits of every hub stream, the
 * projector's lag in events and in seconds (the age of the first event it has not acknowledged),
 * and the search index's lag in events. One stream list and one consumer list per work stream per
 * read. At scrape, not on a timer: an idle hub nobody scrapes makes no JetStream API calls (a
 * 15 s timer in every process was most of an idle process's NATS traffic), and a scrape sees
 * values read for it.
 */
export function createConsumerStats(deps: {
  jsm: JetStreamManager;
  layout: EventLayout;
  metrics: HubMetrics;
  logger: Logger;
  /**
   * events_max_bytes: the events stream's limit even where the stream holds none (on a
   * nats-server below 2.10.5 the ingress enforces it; shared/bus/topology.ts).
   */
  eventsMaxBytes: number;
}): ConsumerStats {
  const { metrics, layout } = deps;
  const events = new Set(layout.streams());
  /** The projector's lag summed over the partitions (events), and the oldest (seconds). */
  let lag = { events: 0, seconds: 0, index: 0 };

  const streams = async () => {
    for await (const s of deps.jsm.streams.list()) {
      const stream = s.config.name;
      if (!HUB_STREAM.test(stream)) continue;
      metrics.streamMessages.set({ stream }, s.state.messages);
      metrics.streamBytes.set({ stream }, s.state.bytes);
      if (s.config.max_msgs > 0) metrics.streamLimitMessages.set({ stream }, s.config.max_msgs);
      const maxBytes = events.has(stream) ? deps.eventsMaxBytes : s.config.max_bytes;
      if (maxBytes > 0) metrics.streamLimitBytes.set({ stream }, maxBytes);
    }
  };

  const projectorLag = async (stream: string, c: ConsumerInfo) => {
    const behind = c.num_pending + c.num_ack_pending;
    lag.events += behind;
    if (behind === 0) return;
    const first = await deps.jsm.streams
      .getMessage(stream, { seq: c.ack_floor.stream_seq + 1 })
      .catch(() => null);
    if (first) {
      lag.seconds = Math.max(lag.seconds, (Date.now() - first.time.getTime()) / 1000);
    }
  };

  const consumers = async (stream: string) => {
    let projectorBehind = 0;
    let indexBehind: number | undefined;
    for await (const c of deps.jsm.consumers.list(stream)) {
      // Ephemeral consumers (KV watches, ordered readers) come and go; only durables hold work.
      if (!c.config.durable_name) continue;
      const labels = { stream, consumer: c.name };
      metrics.consumerPending.set(labels, c.num_pending);
      metrics.consumerAckPending.set(labels, c.num_ack_pending);
      metrics.consumerRedelivered.set(labels, c.num_redelivered);
      if (events.has(stream) && c.name === TOPOLOGY.consumers.projector) {
        await projectorLag(stream, c);
        projectorBehind = c.num_pending + c.num_ack_pending;
      }
      if (events.has(stream) && c.name === INDEX_CONSUMER) {
        indexBehind = c.num_pending + c.num_ack_pending;
      }
    }
    // An index fed from the projector's deliveries has no durable of its own: it is behind by
    // what the projector is (give or take its own queue, at most 4,000 events).
    lag.index += indexBehind ?? projectorBehind;
  };

  const poll = async () => {
    try {
      await streams();
      lag = { events: 0, seconds: 0, index: 0 };
      for (const stream of [...layout.streams(), ...WORK_QUEUE_STREAMS]) {
        // A work queue appears with the first service that needs it.
        await consumers(stream).catch((err: unknown) =>
          deps.logger.debug({ stream, err: (err as Error).message }, "consumer stats unavailable"),
        );
      }
      metrics.projectorLag.set(lag.events);
      metrics.projectorLagSeconds.set(lag.seconds);
      metrics.indexLag.set(lag.index);
    } catch (err) {
      deps.logger.debug({ err: (err as Error).message }, "stream stats unavailable");
    }
  };
  return {
    refresh: createSharedRead({ read: poll, timeoutMs: READ_TIMEOUT_MS }),
  };
}
