import type { IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import { unbracket } from "./policy.ts";
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

/** A lookup that answers every query with the pinned address, so nothing re-resolves the name. */
function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

function firstHeader(res: IncomingMessage, name: string): string | undefined {
  const value = res.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

interface AnswerReader {
  readonly maxResponseBytes: number;
  readonly signal: AbortSignal;
  readonly resolve: (raw: RawResponse) => void;
  readonly reject: (err: Error) => void;
}

/**
 * Reads and discards a receiver's answer; never buffers or logs its body. The answer counts only
 * once it is complete, under the attempt's deadline and within the cap.
 */
function readAnswer(res: IncomingMessage, reader: AnswerReader): void {
  const { maxResponseBytes, signal, resolve, reject } = reader;
  const result: RawResponse = {
    status: res.statusCode ?? 0,
    retryAfter: firstHeader(res, "retry-after"),
  };
  // A body declared above the cap is refused before any of it is read (as for executors).
  if (Number(firstHeader(res, "content-length")) > maxResponseBytes) {
    reject(new ResponseTooLarge(result.status));
    res.destroy();
    return;
  }
  let seen = 0;
  res.on("data", (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > maxResponseBytes) {
      reject(new ResponseTooLarge(result.status));
      res.destroy();
    }
  });
  const unfinished = () =>
    reject(
      signal.aborted
        ? new DeadlineExceeded("deadline exceeded")
        : new IncompleteResponse("incomplete"),
    );
  res.on("end", () => resolve(result));
  res.on("close", () => {
    if (res.complete) resolve(result);
    else unfinished();
  });
  res.on("error", () => {
    if (!res.complete) unfinished();
  });
}

/**
 * POSTs over TLS with node:https, connected to the pinned address while SNI, the certificate
 * check and the Host header use the URL's name. Kept-alive connections come from the pool's agent
 * for this name, port, address and CA set, so a connection is only reused for the name it was
 * verified for.
 */
export function sendTls(request: SendRequest): Promise<RawResponse> {
  const { url, pinned, options, maxResponseBytes, signal } = request;
  return new Promise((resolve, reject) => {
    const body = typeof options.body === "string" ? Buffer.from(options.body) : options.body;
    const hostname = unbracket(url.hostname);
    const agent =
      options.connections?.agentFor({
        hostname,
        port: url.port,
        address: pinned.address,
        ...(options.ca === undefined ? {} : { ca: options.ca }),
      }) ?? false;
    const req = httpsRequest(
      {
        protocol: url.protocol,
        hostname,
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: "POST",
        headers: { ...options.headers, "content-length": String(body.byteLength) },
        // Connect to the address we checked; Host and TLS servername keep the original name.
        lookup: pinnedLookup(pinned.address, pinned.family),
        agent,
        ca: options.ca === undefined ? undefined : [...[options.ca].flat()],
      },
      (res) => readAnswer(res, { maxResponseBytes, signal, resolve, reject }),
    );
    const onAbort = () => req.destroy(new DeadlineExceeded("deadline exceeded"));
    if (signal.aborted) onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    req.on("error", (err: Error) => {
      const stale = req.reusedSocket && STALE_CONNECTION_CODES.has(errorCode(err) ?? "");
      reject(stale ? new StaleConnection(err) : err);
    });
    req.on("close", () => signal.removeEventListener("abort", onAbort));
    req.end(body);
  });
}
