import type { Consumer, ConsumerMessages } from "@nats-io/jetstream";

/** How long one pull request waits, and how often nats-server shows it alive while idle. */
export interface PullWindow {
  readonly expires: number;
  readonly idle_heartbeat: number;
}

/**
 * Every hub consumer's pulls: a request waits 30 s, and nats-server shows it alive every 15 s
 * (nats.js's defaults). An idle pull wakes its process once per heartbeat and once per renewed
 * request, but longer windows cost availability:
 * - a replicated consumer's leader can be lost with a node, and nats.js notices that only by two
 *   missed heartbeats (docs/deploy.md, R3);
 * - after any reconnect nats.js pulls again only once it has read the consumer's info, and when
 *   that read fails (JetStream still recovering after a restart) it tries again after the pull's
 *   expiry. With 2-minute pulls on single-replica consumers a hub stalled for up to 2 minutes
 *   after a NATS restart (`tests/faults/example-worker.test.ts` timed out in CI).
 */
export const HUB_PULL: PullWindow = { expires: 30_000, idle_heartbeat: 15_000 };

/** Starts a hub consumer's `consume()` in the hub's pull window. */
export async function consumeInWindow(
  consumer: Consumer,
  maxMessages: number,
): Promise<ConsumerMessages> {
  return await consumer.consume({ max_messages: maxMessages, ...HUB_PULL });
}
