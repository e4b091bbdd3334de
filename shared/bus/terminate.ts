import type { JsMsg } from "@nats-io/jetstream";

/**
 * Tells the server never to deliver this message again, with a bare `+TERM`. nats.js's
 * `term(reason)` sends `+TERM <reason>`, which nats-server understands from 2.10.4 only: 2.9
 * ignores the whole acknowledgement, so the message stays pending and comes back after every ack
 * wait. The reason goes to the caller's log line instead.
 */
export function terminate(msg: JsMsg): void {
  msg.term();
}
