import type { JsMsg } from "@nats-io/jetstream";
import { decodeEvent, PoisonMessageError } from "../bus/index.ts";
import type { JobEvent } from "../domain/index.ts";

/** What each delivery decoded to, while the message lives (a poison one's error too). */
const decoded = new WeakMap<JsMsg, JobEvent | PoisonMessageError>();

/**
 * Decodes a delivery once per process: the lanes of a shared feed (shared-feed.ts) receive the
 * same message object, and the second one reads the first one's event. Events are readonly, so
 * the lanes may share it. Throws the delivery's {@link PoisonMessageError} to each lane.
 */
export function decodeDelivery(msg: JsMsg): JobEvent {
  let event = decoded.get(msg);
  if (event === undefined) {
    try {
      event = decodeEvent(msg.data);
    } catch (err) {
      if (!(err instanceof PoisonMessageError)) throw err;
      event = err;
    }
    decoded.set(msg, event);
  }
  if (event instanceof PoisonMessageError) throw event;
  return event;
}
