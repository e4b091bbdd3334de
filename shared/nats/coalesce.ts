import type { NatsConnection } from "@nats-io/transport-node";

/** The parts of nats.js's (internal) protocol handler that {@link coalesceWrites} replaces. */
interface ProtocolHandlerLike {
  outbound: { fill(buf: Uint8Array, ...payloads: Uint8Array[]): void; size(): number };
  pendingLimit: number;
  flushPending(): void;
  sendCommand(cmd: string | Uint8Array, ...payloads: Uint8Array[]): void;
}

const encoder = new TextEncoder();

function protocolOf(nc: NatsConnection): ProtocolHandlerLike | undefined {
  const protocol = (nc as unknown as { protocol?: Partial<ProtocolHandlerLike> }).protocol;
  if (
    protocol === undefined ||
    typeof protocol.sendCommand !== "function" ||
    typeof protocol.flushPending !== "function" ||
    typeof protocol.pendingLimit !== "number" ||
    typeof protocol.outbound?.fill !== "function" ||
    typeof protocol.outbound?.size !== "function"
  ) {
    return undefined;
  }
  return protocol as ProtocolHandlerLike;
}

/**
 * Makes a connection write its commands once per event-loop turn instead of once per microtask
 * checkpoint. nats.js schedules a flush with queueMicrotask after the first buffered command, so
 * a consumer that settles a few dozen messages per socket read still issues a dozen small
 * writes; in bench profiles those writes (`writeBuffered`) were 13–17% of the callback service's
 * CPU, and each is a read for nats-server too. Deferring the flush to setImmediate keeps order
 * (one FIFO buffer) and adds no timer delay; a full buffer still flushes at once, as before.
 *
 * The handler is nats.js internals (checked for nats-core 3.x); when its shape differs the
 * connection is left as it is and false is returned, so an upgrade can cost speed, never
 * correctness.
 */
export function coalesceWrites(nc: NatsConnection): boolean {
  const protocol = protocolOf(nc);
  if (protocol === undefined) return false;
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    protocol.flushPending();
  };
  protocol.sendCommand = (cmd, ...payloads) => {
    protocol.outbound.fill(typeof cmd === "string" ? encoder.encode(cmd) : cmd, ...payloads);
    if (protocol.outbound.size() >= protocol.pendingLimit) {
      protocol.flushPending();
    } else if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  return true;
}
