import type { DeliverOptions } from "./deliver.ts";

/** One POST to send: the checked URL, the address it is pinned to, and the attempt's limits. */
export interface SendRequest {
  readonly url: URL;
  /** The address the egress check allowed; the connection goes there and nowhere else. */
  readonly pinned: { readonly address: string; readonly family: 4 | 6 };
  readonly options: DeliverOptions;
  readonly maxResponseBytes: number;
  /** Aborted at the attempt's deadline. */
  readonly signal: AbortSignal;
}

/** What an answer came to once read (its body is read up to the cap and discarded). */
export interface RawResponse {
  readonly status: number;
  readonly retryAfter: string | undefined;
}

/** A transport: plain HTTP (send-plain.ts) or TLS (send-tls.ts). */
export type Send = (request: SendRequest) => Promise<RawResponse>;

export class DeadlineExceeded extends Error {
  readonly code = "DEADLINE";
}

export class ResponseTooLarge extends Error {
  readonly code = "RESPONSE_TOO_LARGE";
  constructor(readonly status: number) {
    super("response body above the limit");
  }
}

/** The receiver closed the connection before its body was complete. */
export class IncompleteResponse extends Error {
  readonly code = "INCOMPLETE_RESPONSE";
}

/** Errors of a kept-alive connection the receiver closed just as we wrote to it. */
export const STALE_CONNECTION_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "EPIPE",
  "ECONNABORTED",
]);

/** The request failed on a reused connection before any answer: send it once more. */
export class StaleConnection extends Error {
  constructor(cause: unknown) {
    super("reused connection was closed by the receiver", { cause });
  }
}

/** The error's code, when it has one (node:net and Bun's fetch both set `code`). */
export function errorCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}
