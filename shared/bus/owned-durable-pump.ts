import type { JsMsg } from "@nats-io/jetstream";
import { type DeliveryGap, deliveryGapDetector } from "./delivery-gaps.ts";

export interface OwnedDurablePump {
  /** Wakes the pump if it waits for room (the fold took messages off a full queue, or stops). */
  roomMade(): void;
  /** Resolves when the pump ends; rejects if the iterator throws (its connection closed). */
  readonly done: Promise<void>;
}

/**
 * Moves the messages of a durable that one process owns (the projector's, the indexer's:
 * AckPolicy.All, recreated at each lease) into that process's fold queue.
 *
 * - It stops at a delivery gap: someone else pulled from the durable (see deliveryGapDetector),
 *   and the owner must take it again from its own position (`onGap`).
 * - While the queue is full it takes nothing, so nats.js stops pulling. Unbounded, the projector's
 *   queue held 16k messages behind a burst (its RSS peak), each one's ack wait running.
 * - It ends when `running` turns false; what it did not take is un-acked and comes again.
 */
export function pumpOwnedDurable(deps: {
  readonly messages: AsyncIterable<JsMsg>;
  /** The fold still takes messages. */
  readonly running: () => boolean;
  /**
   * Before each message: a wait until it may be taken (the projector: while its lease lapsed), or
   * undefined when it may be taken now (no promise and no turn of the loop per message).
   */
  readonly beforeEach?: () => Promise<void> | undefined;
  /** Queues the message and wakes the fold. */
  readonly push: (msg: JsMsg) => void;
  readonly full: () => boolean;
  readonly onGap: (gap: DeliveryGap) => void;
}): OwnedDurablePump {
  let room: (() => void) | undefined;
  const gapOf = deliveryGapDetector();
  const done = (async () => {
    for await (const msg of deps.messages) {
      const wait = deps.beforeEach?.();
      if (wait !== undefined) await wait;
      if (!deps.running()) break;
      const gap = gapOf(msg);
      if (gap !== undefined) {
        deps.onGap(gap);
        break;
      }
      deps.push(msg);
      while (deps.full() && deps.running()) {
        await new Promise<void>((resolve) => {
          room = resolve;
        });
        room = undefined;
      }
    }
  })();
  return { roomMade: () => room?.(), done };
}
