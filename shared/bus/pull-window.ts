import type { Consumer, ConsumerInfo, ConsumerMessages } from "@nats-io/jetstream";

/** How long one pull request waits, and how often nats-server shows it alive while idle. */
export interface PullWindow {
  readonly expires: number;
  readonly idle_heartbeat: number;
}

/**
 * A replicated consumer's pulls: its leader can be lost with a node, and nats.js notices that only
 * by two missed heartbeats (docs/deploy.md, R3), so they stay short.
 */
export const REPLICATED_PULL: PullWindow = { expires: 30_000, idle_heartbeat: 15_000 };

/**
 * A single-replica consumer's pulls: it has no leader to lose, and nats.js pulls again by itself
 * after a reconnect, so a pull waits 120 s with the longest heartbeat nats.js takes (30 s).
 */
export const SINGLE_REPLICA_PULL: PullWindow = { expires: 120_000, idle_heartbeat: 30_000 };

/**
 * The pull window for a consumer. An idle pull wakes its process once per heartbeat (nats-server's,
 * and nats.js's check of it) and once per renewed request, for every consumer: a hub of 16
 * partitions holds about 50 of them, so an idle hub's cost grows with these wake-ups.
 */
export function pullWindow(info: ConsumerInfo): PullWindow {
  // nats-server lists a replicated consumer's other peers (offline ones too); a single one, none.
  return (info.cluster?.replicas?.length ?? 0) > 0 ? REPLICATED_PULL : SINGLE_REPLICA_PULL;
}

/**
 * Starts a hub consumer's `consume()` in its pull window. The info is the one nats.js fetched with
 * the consumer (`info(true)`), so this makes no request.
 */
export async function consumeInWindow(
  consumer: Consumer,
  maxMessages: number,
): Promise<ConsumerMessages> {
  const window = pullWindow(await consumer.info(true));
  return await consumer.consume({ max_messages: maxMessages, ...window });
}
