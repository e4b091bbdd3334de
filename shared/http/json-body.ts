import {
  ClientDisconnectedError,
  MalformedJsonError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
} from "../errors/index.ts";

const JSON_TYPE = /^application\/json\s*(;|$)/i;
/** Fatal: a body that is not UTF-8 is malformed, not silently repaired. Stateless, so shared. */
const utf8 = new TextDecoder("utf-8", { fatal: true });

/** A parsed JSON body and its text (number checks need the literals as sent). */
export interface JsonBody {
  readonly value: unknown;
  readonly text: string;
}

/** The body limit of the Client API; other surfaces name their own (the operator API's). */
const BODY_LIMIT_KEY = "server.max_body_bytes";

function tooLarge(maxBytes: number, seen: string, limitName: string): PayloadTooLargeError {
  return new PayloadTooLargeError({
    detail: `The body is ${seen}; the limit is ${maxBytes} bytes (${limitName}).`,
  });
}

/**
 * Reads at most `maxBytes` of a body. Past the limit it stops reading and throws 413: Bun answers
 * and then discards the rest of the body itself, so the client gets the answer whatever the size
 * and framing (Bun's own body limit is set far above ours, docs/security.md). A client that goes
 * away mid-body is {@link ClientDisconnectedError}, not a server error. Every handler that reads a
 * body reads it through here (never request.text() or .json(), which read any size into memory).
 * `limitName` says in the 413 where the limit comes from.
 */
export async function readBodyCapped(
  request: Request,
  maxBytes: number,
  limitName: string = BODY_LIMIT_KEY,
): Promise<Uint8Array> {
  const declared = request.headers.get("content-length");
  if (declared !== null && Number(declared) > maxBytes) {
    throw tooLarge(maxBytes, `declared as ${declared.slice(0, 20)} bytes`, limitName);
  }
  if (!request.body) return new Uint8Array(0);
  if (declared !== null && /^\d+$/.test(declared)) {
    // The common case, a declared length within the limit: one native read. Reading through a
    // stream reader costs about a third of the ingress's CPU per request in Bun (profiled).
    try {
      return new Uint8Array(await request.arrayBuffer());
    } catch (err) {
      throw new ClientDisconnectedError({
        detail: "The client closed the connection before the body was complete.",
        cause: err,
      });
    }
  }
  // Chunked (or a length Bun let through that is no number): read no further than the limit.
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    let step: Awaited<ReturnType<typeof reader.read>>;
    try {
      step = await reader.read();
    } catch (err) {
      throw new ClientDisconnectedError({
        detail: "The client closed the connection before the body was complete.",
        cause: err,
      });
    }
    if (step.done) break;
    total += step.value.byteLength;
    // Not cancelled: Bun discards the remainder after the answer, and keeps the connection usable.
    if (total > maxBytes) throw tooLarge(maxBytes, `larger than ${maxBytes} bytes`, limitName);
    chunks.push(step.value);
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/**
 * Reads a JSON request body for POST handlers: 415 unless application/json, 413 above `maxBytes`
 * (from Content-Length before reading, and from the bytes read), 400 malformed_json otherwise.
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<JsonBody> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!JSON_TYPE.test(contentType)) {
    throw new UnsupportedMediaTypeError({
      detail: `Content-Type must be application/json, got '${contentType.slice(0, 100) || "none"}'.`,
    });
  }
  const bytes = await readBodyCapped(request, maxBytes);
  try {
    const text = utf8.decode(bytes);
    return { value: JSON.parse(text), text };
  } catch (err) {
    throw new MalformedJsonError({
      detail: `The body is not valid JSON: ${(err as Error).message}`.slice(0, 300),
    });
  }
}
