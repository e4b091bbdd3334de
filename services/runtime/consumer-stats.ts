import type { JetStreamManager } from "@nats-io/jetstream";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { INDEX_CONSUMER } from "../indexer/index.ts";

/**
 * Polls the events stream's durable consumers into gauges: pending, ack pending, redelivered, and
 * the projector's and the search index's lag (events not yet applied).
 */
export function startConsumerStats(deps: {
  jsm: JetStreamManager;
  metrics: HubMetrics;
  logger: Logger;
  intervalMs: number;
}): { stop(): Promise<void>; poll(): Promise<void> } {
  const poll = async () => {
    try {
      for await (const c of deps.jsm.consumers.list(TOPOLOGY.eventsStream)) {
        const labels = { consumer: c.name };
        deps.metrics.consumerPending.set(labels, c.num_pending);
        deps.metrics.consumerAckPending.set(labels, c.num_ack_pending);
        deps.metrics.consumerRedelivered.set(labels, c.num_redelivered);
        if (c.name === TOPOLOGY.consumers.projector) {
          deps.metrics.projectorLag.set(c.num_pending + c.num_ack_pending);
        }
        if (c.name === INDEX_CONSUMER) deps.metrics.indexLag.set(c.num_pending + c.num_ack_pending);
      }
    } catch (err) {
      deps.logger.debug({ err: (err as Error).message }, "consumer stats unavailable");
    }
  };
  // Once at start, so the gauges exist before the first interval has passed.
  void poll();
  const timer = setInterval(() => void poll(), deps.intervalMs);
  return {
    poll,
    async stop() {
      clearInterval(timer);
    },
  };
}
