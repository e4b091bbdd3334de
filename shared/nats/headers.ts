/**
 * Event-path NATS headers, built and read without nats.js's general header code.
 *
 * nats.js 3.4 canonicalises, searches and validates on every `set`, and decodes a received
 * message's whole header block (a split, a map and a `set` per line) on the first `headers`
 * access. On the event path that was measurable (profiles of 2026-11-26, POST phase): 27% of the
 * callback service's CPU went to reading `Sy-Event-Type`, 8% of the executor's to reading
 * `traceparent`, and 9% of the ingress's to setting four headers.
 *
 * Both fast paths depend on nats.js's message shapes, which are public fields of its classes but
 * not part of its interfaces. Where a shape is not there (another nats.js), they fall back to the
 * library's own API, so a change costs speed, never correctness; tests/integration/event-headers.test.ts
 * fails when the fast path stops being taken.
 */
import type { JsMsg } from "@nats-io/jetstream";
import {
  InvalidArgumentError,
  type Msg,
  type MsgHdrs,
  headers as natsHeaders,
} from "@nats-io/transport-node";

/** The header map of nats.js's MsgHdrsImpl (public on the class, not on MsgHdrs). */
type WithMap = MsgHdrs & { headers?: unknown };

/**
 * Headers holding `entries` in order. Keys are the caller's constants (sent as written); values
 * may come from outside (a client's traceparent) and are refused when they hold CR or LF, as
 * nats.js refuses them, and trimmed, as it trims them.
 */
export function headersOf(entries: Readonly<Record<string, string>>): MsgHdrs {
  const h = natsHeaders() as WithMap;
  const map = h.headers instanceof Map ? (h.headers as Map<string, string[]>) : undefined;
  for (const key in entries) {
    const value = entries[key] as string;
    if (map === undefined) {
      h.set(key, value);
      continue;
    }
    if (value.includes("\r") || value.includes("\n")) {
      throw InvalidArgumentError.format("header", "values cannot contain \\r or \\n");
    }
    map.set(key, [value.trim()]);
  }
  return h;
}

/** The raw parts of a received message in nats.js (MsgImpl's public fields). */
interface RawMsg {
  readonly _msg?: { readonly hdr?: unknown };
  readonly _rdata?: unknown;
}

const decoder = new TextDecoder();

/**
 * The received message's header block as bytes (null: it has none); undefined when its shape is
 * not known. A JetStream message wraps the core one.
 */
function rawHeaderBlock(msg: JsMsg | Msg): Uint8Array | null | undefined {
  const core = (msg as unknown as { readonly msg?: RawMsg }).msg ?? (msg as unknown as RawMsg);
  const hdr = core?._msg?.hdr;
  const data = core?._rdata;
  if (typeof hdr !== "number" || !(data instanceof Uint8Array)) return undefined;
  return hdr > -1 ? data.subarray(0, hdr) : null;
}

/**
 * The first value of header `name` (exact, case-sensitive match, as nats.js's `get`), trimmed;
 * undefined when absent or empty.
 */
export function headerOf(msg: JsMsg | Msg, name: string): string | undefined {
  const block = rawHeaderBlock(msg);
  if (block === undefined) return msg.headers?.get(name) || undefined;
  if (block === null) return undefined;
  const text = decoder.decode(block);
  const at = text.indexOf(`\r\n${name}:`);
  if (at < 0) return undefined;
  const from = at + name.length + 3;
  const end = text.indexOf("\r\n", from);
  return text.slice(from, end < 0 ? undefined : end).trim() || undefined;
}

/** True when `headerOf` reads this message's bytes itself (the shape it relies on is there). */
export function readsRawHeaders(msg: JsMsg | Msg): boolean {
  return rawHeaderBlock(msg) !== undefined;
}
