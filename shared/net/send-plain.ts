import {
  DeadlineExceeded,
  errorCode,
  IncompleteResponse,
  type RawResponse,
  ResponseTooLarge,
  type SendRequest,
  STALE_CONNECTION_CODES,
  StaleConnection,
} from "./send.ts";

/**
 * Requests Bun's fetch runs at once in one process unless BUN_CONFIG_MAX_HTTP_REQUESTS (read by
 * Bun at start) raises it; more wait inside Bun (checked on Bun 1.4.5: 256 of 400 concurrent
 * requests reached a receiver that never answered).
 */
export const FETCH_REQUESTS_AT_ONCE = 256;

/** The URL with the pinned address in place of the name: fetch connects there and nowhere else. */
function pinnedTarget({ url, pinned }: SendRequest): string {
  const host = pinned.family === 6 ? `[${pinned.address}]` : pinned.address;
  return `http://${host}${url.port ? `:${url.port}` : ""}${url.pathname}${url.search}`;
}

/** Reads and discards the body up to the cap; never buffers or logs it. */
async function discardBody(res: Response, request: SendRequest): Promise<void> {
  if (!res.body) return;
  const reader = res.body.getReader();
  let seen = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      seen += value.byteLength;
      if (seen > request.maxResponseBytes) {
        await reader.cancel().catch(() => undefined);
        throw new ResponseTooLarge(res.status);
      }
    }
  } catch (err) {
    if (err instanceof ResponseTooLarge) throw err;
    throw request.signal.aborted
      ? new DeadlineExceeded("deadline exceeded")
      : new IncompleteResponse("incomplete");
  }
}

/**
 * POSTs over plain HTTP with Bun's fetch, to the pinned address with the URL's name in the Host
 * header. Bun keeps connections alive per address and port, so a reused connection always goes
 * to an address that passed the egress check (the check runs before every attempt). Without a
 * connection pool in the options, keep-alive is off and every attempt has its own connection.
 *
 * Why fetch and not node:http: in the e2e benchmark the callback service peaked at 110–114 MB
 * with it against 131–151 MB with node:http (whose request, socket and stream objects are all
 * JavaScript), and spent 360–365 against 376–422 µs per job (docs/history/performance.md). TLS stays on
 * node:https (send-tls.ts): fetch's pool is keyed by address and port, and a TLS connection must
 * also be keyed by the name it was verified for.
 */
export async function sendPlain(request: SendRequest): Promise<RawResponse> {
  const { url, options, signal } = request;
  const keepAlive = options.connections !== undefined;
  let res: Response;
  try {
    res = await fetch(pinnedTarget(request), {
      method: "POST",
      headers: { ...options.headers, host: url.host, "accept-encoding": "identity" },
      body: options.body,
      redirect: "manual",
      signal,
      // In Bun, keepalive: false gives the request a connection of its own, closed after it.
      keepalive: keepAlive,
      // Bun's option: the cap counts the bytes on the wire, and a compressed answer stays so.
      decompress: false,
    });
  } catch (err) {
    if (signal.aborted) throw new DeadlineExceeded("deadline exceeded");
    // fetch fails before any answer: on a kept-alive connection the receiver may have closed it
    // as we wrote, so the request almost surely never reached it (the caller sends once more).
    if (keepAlive && STALE_CONNECTION_CODES.has(errorCode(err) ?? ""))
      throw new StaleConnection(err);
    throw err;
  }
  const answer: RawResponse = {
    status: res.status,
    retryAfter: res.headers.get("retry-after") ?? undefined,
  };
  // A body declared above the cap is refused before any of it is read (as for executors).
  if (Number(res.headers.get("content-length")) > request.maxResponseBytes) {
    await res.body?.cancel().catch(() => undefined);
    throw new ResponseTooLarge(answer.status);
  }
  await discardBody(res, request);
  return answer;
}
