import type { JsMsg } from "@nats-io/jetstream";

/** Deliveries of a durable went to another subscriber between two of ours. */
export interface DeliveryGap {
  /** The consumer sequence this subscriber should have seen next. */
  readonly expected: number;
  /** The one it saw. */
  readonly got: number;
}

/**
 * Watches the consumer sequence of a durable that one process owns (the projector's, the
 * indexer's: AckPolicy.All, recreated at each lease). Every delivery to any subscriber takes the
 * next consumer sequence, redeliveries included, so a jump means someone else pulled from it: a
 * leader that was paused past its lease and, on waking, pulled once more before it noticed. Its
 * messages are then un-acked elsewhere, and the owner's next ack-all would settle them unwritten.
 * Call once per message, on a freshly created durable (its first delivery is sequence 1).
 */
export function deliveryGapDetector(): (msg: JsMsg) => DeliveryGap | undefined {
  let last = 0;
  return (msg) => {
    const got = msg.info.deliverySequence;
    const expected = last + 1;
    last = got;
    return got === expected ? undefined : { expected, got };
  };
}
