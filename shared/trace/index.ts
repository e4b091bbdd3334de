import { randomBytes } from "node:crypto";
import { type MsgHdrs, headers as natsHeaders } from "@nats-io/transport-node";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A W3C traceparent from the caller when it is well-formed, else a new one. */
export function traceparentFrom(header: string | null | undefined): string {
  const match = header ? TRACEPARENT.exec(header.trim()) : null;
  if (match && !/^0+$/.test(match[1] ?? "") && !/^0+$/.test(match[2] ?? ""))
    return header?.trim() ?? "";
  return `00-${randomBytes(16).toString("hex")}-${randomBytes(8).toString("hex")}-01`;
}

/** The trace id part, for log lines. */
export function traceIdOf(traceparent: string): string {
  return traceparent.split("-")[1] ?? "";
}

/** NATS headers carrying a traceparent, for messages that are not events (tasks). */
export function traceHeaders(traceparent: string): MsgHdrs {
  const h = natsHeaders();
  h.set("traceparent", traceparent);
  return h;
}
