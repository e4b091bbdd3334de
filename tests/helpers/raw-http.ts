import { connect, type Socket } from "node:net";

/** One HTTP/1.1 answer as read off the socket. */
export interface RawAnswer {
  /** 0 when no status line arrived. */
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** True when the server closed the connection (before or after answering). */
  readonly closed: boolean;
  /** True when `timeoutMs` passed before an answer was complete. */
  readonly timedOut: boolean;
  /** Bytes of the request body that were written before the answer (or the end). */
  readonly bodyBytesWritten: number;
}

export interface RawRequest {
  readonly port: number;
  /** Request line and headers, without the blank line that ends them. */
  readonly head: string;
  /** Body bytes to send after the head, produced lazily so huge bodies cost no memory. */
  readonly body?: Iterable<Uint8Array>;
  /** Pause between body chunks (a slow client). */
  readonly chunkDelayMs?: number;
  readonly timeoutMs?: number;
}

function parseAnswer(raw: Buffer): {
  status: number;
  headers: Record<string, string>;
  body: string;
  complete: boolean;
} {
  const end = raw.indexOf("\r\n\r\n");
  if (end < 0) return { status: 0, headers: {}, body: "", complete: false };
  const lines = raw.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? "")?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0)
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = raw.subarray(end + 4);
  const length = Number(headers["content-length"] ?? "0");
  // 1xx answers (100 Continue) are followed by the real one.
  if (status >= 100 && status < 200) {
    const next = parseAnswer(rest);
    return next;
  }
  return {
    status,
    headers,
    body: rest.subarray(0, length).toString("utf8"),
    complete: rest.length >= length,
  };
}

/**
 * Sends raw bytes to 127.0.0.1 and reads the first complete answer, while still writing the body,
 * the way a careful client does. Never throws for network outcomes: they are in the answer.
 */
export function rawHttp(request: RawRequest): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket: Socket = connect(request.port, "127.0.0.1");
    let received = Buffer.alloc(0);
    let written = 0;
    let settled = false;
    let closed = false;
    const finish = (timedOut: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const parsed = parseAnswer(received);
      socket.destroy();
      resolve({
        status: parsed.status,
        headers: parsed.headers,
        body: parsed.body,
        closed,
        timedOut,
        bodyBytesWritten: written,
      });
    };
    const timer = setTimeout(() => finish(true), request.timeoutMs ?? 10_000);
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      if (parseAnswer(received).complete) finish(false);
    });
    socket.on("error", () => {
      closed = true;
      finish(false);
    });
    socket.on("close", () => {
      closed = true;
      finish(false);
    });
    socket.on("connect", async () => {
      socket.write(`${request.head}\r\n\r\n`);
      for (const chunk of request.body ?? []) {
        if (settled || socket.destroyed) return;
        const more = socket.write(chunk);
        written += chunk.byteLength;
        if (!more) await new Promise((r) => socket.once("drain", r));
        if (request.chunkDelayMs) await Bun.sleep(request.chunkDelayMs);
      }
    });
  });
}

/** `total` bytes of `fill`, in 64 KiB chunks, optionally in chunked transfer coding. */
export function* bodyChunks(total: number, options: { chunked?: boolean; fill?: string } = {}) {
  const size = 65_536;
  const block = Buffer.alloc(size, options.fill ?? "x");
  let sent = 0;
  while (sent < total) {
    const n = Math.min(size, total - sent);
    const data = block.subarray(0, n);
    if (options.chunked) {
      yield Buffer.concat([Buffer.from(`${n.toString(16)}\r\n`), data, Buffer.from("\r\n")]);
    } else {
      yield data;
    }
    sent += n;
  }
  if (options.chunked) yield Buffer.from("0\r\n\r\n");
}

/** Everything a server sent back on one connection, until it closed or `timeoutMs` passed. */
export interface RawExchange {
  readonly received: string;
  /** The status code of each answer, in order. */
  readonly statuses: readonly number[];
  readonly closed: boolean;
  readonly timedOut: boolean;
}

/**
 * Writes `bytes` in one write (several requests back to back: pipelining) and collects every byte
 * the server sends until it closes the connection or `timeoutMs` passes.
 */
export function rawExchange(request: {
  readonly port: number;
  readonly bytes: string;
  readonly timeoutMs?: number;
}): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket: Socket = connect(request.port, "127.0.0.1");
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (closed: boolean, timedOut: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const text = received.toString("latin1");
      // Answers follow one another directly: the next status line starts where a body ends.
      const statuses = [...text.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
      resolve({ received: text, statuses, closed, timedOut });
    };
    const timer = setTimeout(() => finish(false, true), request.timeoutMs ?? 10_000);
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
    });
    socket.on("error", () => finish(true, false));
    socket.on("close", () => finish(true, false));
    socket.on("connect", () => socket.write(request.bytes));
  });
}
