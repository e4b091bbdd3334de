import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type AddressInfo, createServer, type Server, type Socket } from "node:net";
import { deliverWebhook, parseCidrList } from "../../shared/net/index.ts";
import { generateWebhookSecret, webhookHeaders } from "../../shared/webhooks/index.ts";

// The receiver's answer cap, at the socket: a raw server sends exactly the bytes each test names
// and then stalls without ending the body. An attempt that ends as response_too_large (rather than
// a timeout at the deadline) stopped reading at the cap instead of waiting for the rest.

const CAP = 2048;
const LOOPBACK = parseCidrList(["127.0.0.0/8"]);
const body = JSON.stringify({ type: "job.completed", data: { job_id: "j_cap" } });
const headers = webhookHeaders({
  id: "msg_cap",
  timestamp: Math.floor(Date.now() / 1000),
  body,
  secrets: [generateWebhookSecret()],
});

const chunk = (bytes: number) => `${bytes.toString(16)}\r\n${"x".repeat(bytes)}\r\n`;

/** What the raw server writes per path; none of them ends its body unless it says so. */
const ANSWERS: Record<string, string> = {
  // Declares a body far above the cap and sends none of it.
  "/declared": "HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\n",
  // Chunked, one byte past the cap, then nothing more.
  "/one-past": `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${chunk(CAP)}${chunk(1)}`,
  // Close-delimited (no length, no chunks), one byte past the cap, then nothing more.
  "/unframed": `HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n${"x".repeat(CAP + 1)}`,
  // Exactly the cap, complete: the cap is inclusive.
  "/at-cap": `HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${chunk(CAP)}0\r\n\r\n`,
};

let server: Server;
let port = 0;
/** Resolves when the hub side has closed the connection of a request to that path. */
const closed = new Map<string, Promise<void>>();

beforeAll(async () => {
  server = createServer((socket: Socket) => {
    socket.once("data", (request: Buffer) => {
      const path = request.toString("latin1").split(" ")[1] ?? "";
      closed.set(path, new Promise((resolve) => socket.once("close", () => resolve())));
      socket.write(ANSWERS[path] ?? "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.close();
});

const deliver = (path: string) =>
  deliverWebhook({
    url: `http://127.0.0.1:${port}${path}`,
    body,
    headers,
    allowCidrs: LOOPBACK,
    // Far above what reaching the cap takes: a timeout here means reading went on past it.
    timeoutMs: 20_000,
    maxResponseBytes: CAP,
  });

describe("deliverWebhook reads a receiver's answer up to maxResponseBytes and no further", () => {
  test("a Content-Length above the cap fails at once, before any body byte", async () => {
    const attempt = await deliver("/declared");
    expect(attempt).toMatchObject({
      ok: false,
      status: 200,
      errorClass: "response_too_large",
      message: `the answer is larger than ${CAP} bytes`,
    });
    // The connection is dropped there, not kept for reuse.
    await closed.get("/declared");
  });

  test("a chunked body one byte past the cap fails without waiting for the rest", async () => {
    expect(await deliver("/one-past")).toMatchObject({
      ok: false,
      status: 200,
      errorClass: "response_too_large",
    });
    await closed.get("/one-past");
  });

  test("a close-delimited body one byte past the cap fails without waiting for the rest", async () => {
    expect(await deliver("/unframed")).toMatchObject({
      ok: false,
      status: 200,
      errorClass: "response_too_large",
    });
    await closed.get("/unframed");
  });

  test("a complete body of exactly the cap is a delivery", async () => {
    const attempt = await deliver("/at-cap");
    expect(attempt).toMatchObject({ ok: true, status: 200 });
    expect(attempt.errorClass).toBeUndefined();
  });
});
