/** How long one pull request waits, and how often nats-server shows it alive while idle. */
export interface PullWindow {
  readonly expires: number;
  readonly idle_heartbeat: number;
}

/**
 * Every hub consumer's pulls: a request waits 30 s, and nats-server shows it alive every 15 s
 * (nats.js's defaults). An idle pull wakes its process once per heartbeat and once per renewed
 * request. A longer heartbeat would wake it less, but a replicated consumer's leader can be lost
 * with a node, and a loop notices that only by two missed heartbeats (docs/deploy.md, R3). After
 * a reconnect every hub loop pulls again at once, whatever the window (consumeRecovering, and the
 * fetch loop in shared/worker/pull.ts).
 */
export const HUB_PULL: PullWindow = { expires: 30_000, idle_heartbeat: 15_000 };
