import type {
  ConsumerNotification,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import {
  consumeRecovering,
  type DeliveryGap,
  type DurableOptions,
  durableStart,
  logConsumeRestarts,
  type OwnedDurablePump,
  pumpOwnedDurable,
  recreateDurableAt,
} from "../bus/index.ts";
import type { Logger } from "../log/index.ts";

/** A durable one runner owns while it leads, and the pump that moves its deliveries. */
export interface OwnDurable {
  /** Stops the pump and closes the consumer; what was not taken comes again. */
  close(): Promise<void>;
  /** The pump waits for room: the fold took messages off a full queue. */
  roomMade(): void;
}

export interface OwnDurableDeps {
  /** Its reconnects start the durable's pull again (shared/bus/recovering-consume.ts). */
  readonly nc: Pick<NatsConnection, "status">;
  readonly js: JetStreamClient;
  readonly logger: Logger;
  readonly jsm: JetStreamManager;
  readonly options: DurableOptions & { readonly stream: string };
  /**
   * Where it starts: the model's own position, or undefined for the durable's ack floor; `lowest`
   * lowers it (a follower's position, shared-feed.ts).
   */
  readonly resumeFrom: number | undefined;
  readonly lowest?: number;
  readonly push: (msg: JsMsg) => void;
  readonly full: () => boolean;
  /** Before each message: a wait while the lease lapsed, or undefined to take it now. */
  readonly beforeEach: () => Promise<void> | undefined;
  readonly onGap: (gap: DeliveryGap) => void;
  /** The consumer ended or went silent under the runner: it must be taken again. */
  readonly lost: (why: "ended" | "deleted" | "silent", err?: Error) => void;
}

/**
 * Takes the durable again from the model's position (or its ack floor) and starts pumping its
 * deliveries. Resolves with the durable, where it starts and how many messages it has to deliver.
 */
export async function takeOwnDurable(
  deps: OwnDurableDeps,
): Promise<{ readonly durable: OwnDurable; readonly fromSeq: number; readonly pending: number }> {
  const { options } = deps;
  const start = deps.resumeFrom ?? (await durableStart(deps.jsm, options));
  const fromSeq = Math.min(start, deps.lowest ?? start);
  await recreateDurableAt(deps.jsm, { ...options, fromSeq });
  const consumer = await deps.js.consumers.get(options.stream, options.name);
  // The info fetched by get(): what the durable has to deliver from its start.
  const pending = (await consumer.info(true)).num_pending;
  let open = true;
  const messages = await consumeRecovering({
    consumer,
    nc: deps.nc,
    maxMessages: 500,
    // Two missed heartbeats retake the durable instead (watchConsumer).
    restartOnSilence: false,
    restarted: logConsumeRestarts(deps.logger, options.name),
    notified: watchConsumer({ open: () => open, lost: deps.lost }),
  });
  const pump: OwnedDurablePump = pumpOwnedDurable({
    messages,
    running: () => open,
    beforeEach: deps.beforeEach,
    push: deps.push,
    full: deps.full,
    onGap: deps.onGap,
  });
  pump.done.catch((err: unknown) => {
    // The iterator threw (its connection closed under it): nothing more would come while this
    // process keeps the lease, so it is taken again unless it is closing.
    if (open) deps.lost("ended", err as Error);
  });
  return {
    fromSeq,
    pending,
    durable: {
      async close() {
        open = false;
        pump.roomMade();
        await messages.close();
      },
      roomMade: () => pump.roomMade(),
    },
  };
}

/**
 * Reports a consumer to take again when nats.js's consume would wait long for it:
 * - the durable was deleted under it (another process leads too: a claim both won, or it is
 *   stale); nats.js would find the new consumer only after missed heartbeats;
 * - two heartbeats were missed (the consumer's leader was lost with its node: nats-server
 *   answers the pull waiting there with a "Leadership Change" notice, which consume() leaves to
 *   the heartbeats). nats.js would then ask for the consumer's info and, if that fails during
 *   the election, wait a whole pull expiry (30 s) before asking again: a partition's fold
 *   stopped for over a minute in the cluster test. A retake tries again within seconds.
 */
function watchConsumer(deps: {
  readonly open: () => boolean;
  readonly lost: OwnDurableDeps["lost"];
}): (status: ConsumerNotification) => void {
  let reported = false;
  return (status) => {
    const deleted = status.type === "consumer_deleted";
    const silent = status.type === "heartbeats_missed" && status.count >= 2;
    if (reported || (!deleted && !silent)) return;
    reported = true;
    if (deps.open()) deps.lost(deleted ? "deleted" : "silent");
  };
}
