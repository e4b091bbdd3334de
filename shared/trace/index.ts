import type { MsgHdrs } from "@nats-io/transport-node";
import { idBytes } from "../ids/index.ts";
import { headersOf } from "../nats/index.ts";

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The parts of a W3C traceparent (version 00). */
export interface TraceparentParts {
  readonly traceId: string;
  readonly spanId: string;
  /** The trace-flags byte; bit 0 is "sampled". */
  readonly flags: number;
}

/** The parts of a well-formed traceparent (ids not all zero), else undefined. */
export function parseTraceparent(header: string | null | undefined): TraceparentParts | undefined {
  const match = header ? TRACEPARENT.exec(header.trim()) : null;
  if (!match) return undefined;
  const [, traceId = "", spanId = "", flags = "00"] = match;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}

/** A traceparent from its parts. */
export function formatTraceparent(parts: TraceparentParts): string {
  return `00-${parts.traceId}-${parts.spanId}-${(parts.flags & 0xff).toString(16).padStart(2, "0")}`;
}

/** A W3C traceparent from the caller when it is well-formed, else a new one. */
export function traceparentFrom(header: string | null | undefined): string {
  if (parseTraceparent(header)) return header?.trim() ?? "";
  return `00-${idBytes(16).toString("hex")}-${idBytes(8).toString("hex")}-01`;
}

/** The trace id part, for log lines. */
export function traceIdOf(traceparent: string): string {
  return traceparent.split("-")[1] ?? "";
}

/** NATS headers carrying a traceparent, for messages that are not events (tasks, timers). */
export function traceHeaders(traceparent: string): MsgHdrs {
  return headersOf({ traceparent });
}
