import type { Consumer, ConsumerMessages, ConsumerNotification, JsMsg } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../log/index.ts";
import { onReconnect } from "../nats/index.ts";
import { HUB_PULL } from "./pull-window.ts";

/** Why a consume was started again. */
export type ConsumeRestart =
  /** The connection came back: the pull waiting on the old one is gone. */
  | "reconnected"
  /** A pull was answered 503: JetStream, or the consumer, was not there yet. */
  | "no_responders"
  /** Two heartbeats were missed: the pull waiting at the consumer's leader was lost with it. */
  | "heartbeats_missed";

/** A hub consumer's deliveries, across the consume() calls its recovery makes. */
export interface RecoveringConsume extends AsyncIterable<JsMsg> {
  /** Stops pulling: what was delivered already is still yielded, then the iteration ends. */
  close(): Promise<void>;
}

export interface RecoveringConsumeDeps {
  readonly consumer: Consumer;
  /** The consumer's connection: each reconnect starts the pull again. */
  readonly nc: Pick<NatsConnection, "status">;
  /** The pull window (messages delivered and not yet yielded, at most). */
  readonly maxMessages: number;
  /** Each restart (the caller logs it with the consumer's name). */
  readonly restarted?: (why: ConsumeRestart) => void;
  /**
   * Two missed heartbeats start the pull again (default true). False where the caller acts on
   * them itself (the projection runner retakes its durable).
   */
  readonly restartOnSilence?: boolean;
  /** Every notification of the current consume() (the projection runner watches deletions). */
  readonly notified?: (status: ConsumerNotification) => void;
  /** The wait before a restart after a 503, doubled per 503 in a row (default 250 ms to 5 s). */
  readonly noRespondersBackoffMs?: { readonly first: number; readonly max: number };
}

/** `restarted` for a service: one info line per restart, with the consumer's name. */
export const logConsumeRestarts =
  (logger: Logger, consumer: string) =>
  (why: ConsumeRestart): void =>
    logger.info({ consumer, why }, "consume started again");

const NO_RESPONDERS_BACKOFF = { first: 250, max: 5_000 };

/**
 * nats.js's `consume()` with the waits it leaves to heartbeats or to a pull expiry cut short
 * (docs/architecture.md, "Pulls after a reconnect"). nats.js resumes a consume after a reconnect
 * only once it has read the consumer's info, and when that read fails (JetStream still
 * recovering its store) it tries again one pull expiry (30 s) later, with no heartbeat watch in
 * between; a pull answered 503 waits for two missed heartbeats (30 s) too. Here each of those
 * starts a new consume() on the same durable and stops the old one after what it already holds:
 * a pull is sent at once, and a 503 is retried within `noRespondersBackoffMs`. Nothing is
 * acknowledged differently: the messages of both consumes are the durable's, and anything lost
 * in flight comes back after its ack wait, as before.
 */
export async function consumeRecovering(deps: RecoveringConsumeDeps): Promise<RecoveringConsume> {
  const backoff = deps.noRespondersBackoffMs ?? NO_RESPONDERS_BACKOFF;
  const open = () => deps.consumer.consume({ max_messages: deps.maxMessages, ...HUB_PULL });
  let current: ConsumerMessages = await open();
  let closed = false;
  let restarting = false;
  let noResponders = 0;
  let retry: ReturnType<typeof setTimeout> | undefined;

  const restart = async (why: ConsumeRestart) => {
    if (closed || restarting) return;
    restarting = true;
    clearTimeout(retry);
    try {
      const next = await open();
      if (closed) {
        next.stop();
        return;
      }
      const old = current;
      current = next;
      watch(current);
      // After the messages it holds (nats.js queues the stop behind them), its iteration ends.
      old.stop();
      deps.restarted?.(why);
    } finally {
      restarting = false;
    }
  };

  function watch(messages: ConsumerMessages): void {
    void (async () => {
      for await (const status of messages.status()) {
        if (messages !== current || closed) return;
        deps.notified?.(status);
        if (status.type === "no_responders") {
          const delay = Math.min(backoff.first * 2 ** noResponders, backoff.max);
          noResponders++;
          clearTimeout(retry);
          retry = setTimeout(() => void restart("no_responders"), delay);
        } else if (
          status.type === "heartbeats_missed" &&
          status.count >= 2 &&
          deps.restartOnSilence !== false
        ) {
          void restart("heartbeats_missed");
        } else if (status.type === "heartbeat") {
          noResponders = 0;
        }
      }
    })().catch(() => undefined);
  }
  watch(current);

  const stopWatchingConnection = onReconnect(deps.nc, () => void restart("reconnected"));

  return {
    async *[Symbol.asyncIterator]() {
      for (;;) {
        const messages = current;
        for await (const msg of messages) {
          noResponders = 0;
          yield msg;
        }
        // Ended without a successor: closed, or its connection closed.
        if (messages === current) return;
      }
    },
    async close() {
      closed = true;
      clearTimeout(retry);
      stopWatchingConnection();
      await current.close();
    },
  };
}
