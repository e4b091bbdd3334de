import {
  MalformedJsonError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
} from "../../shared/errors/index.ts";

const JSON_TYPE = /^application\/json\s*(;|$)/i;
/** Fatal: a body that is not UTF-8 is malformed, not silently repaired. Stateless, so shared. */
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a JSON request body for POST handlers: 415 unless application/json, 413 above `maxBytes`
 * (from Content-Length before reading, and from the bytes read), 400 malformed_json otherwise.
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const contentType = request.headers.get("content-type") ?? "";
  if (!JSON_TYPE.test(contentType)) {
    throw new UnsupportedMediaTypeError({
      detail: `Content-Type must be application/json, got '${contentType.slice(0, 100) || "none"}'.`,
    });
  }
  const declared = Number(request.headers.get("content-length") ?? "0");
  const tooLarge = () =>
    new PayloadTooLargeError({ detail: `The body is larger than ${maxBytes} bytes.` });
  if (declared > maxBytes) throw tooLarge();
  const bytes = new Uint8Array(await request.arrayBuffer());
  if (bytes.byteLength > maxBytes) throw tooLarge();
  try {
    return JSON.parse(utf8.decode(bytes));
  } catch (err) {
    throw new MalformedJsonError({
      detail: `The body is not valid JSON: ${(err as Error).message}`.slice(0, 300),
    });
  }
}
