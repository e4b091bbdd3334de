import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { CLIENT_TOKENS, type OperatorHub, startOperatorHub } from "../admin/operator-hub.ts";
import { rawExchange } from "../helpers/raw-http.ts";

// Pipelined HTTP/1.1 (docs/api.md and docs/security.md, "Pipelining"). A request that arrives on
// a connection while the answer ahead of it is still being worked on makes Bun (uWS) close the
// connection, and neither request is answered (oven-sh/bun pull request 38128, open, would hold
// the second request instead). The first request has run all the same: a POST /run was stored, so
// its client retries with the same request_id and gets the same job. Asserted exactly here.

let op: OperatorHub;
let port: number;

beforeAll(async () => {
  op = await startOperatorHub();
  port = Number(new URL(op.hub.baseUrl).port);
});
afterAll(() => op?.stop());

const TOKEN = CLIENT_TOKENS.acme;

function runRequest(requestId: string): { bytes: string; body: Record<string, string> } {
  const body = { request_id: requestId, route: "demo.echo", input: "pipelined" };
  const text = JSON.stringify(body);
  const bytes = [
    "POST /run HTTP/1.1",
    "Host: 127.0.0.1",
    `Authorization: Bearer ${TOKEN}`,
    "Content-Type: application/json",
    `Content-Length: ${text.length}`,
    "",
    text,
  ].join("\r\n");
  return { bytes, body };
}

const healthz = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

describe("pipelined HTTP/1.1 requests", () => {
  for (const [name, second] of [
    ["a GET /healthz", healthz],
    ["another POST /run", runRequest("pipelined-second").bytes],
  ] as const) {
    test(`with ${name} behind it: the connection closes, neither is answered, the first is stored`, async () => {
      const requestId = `pipelined-${name.replaceAll(" ", "-")}`;
      const first = runRequest(requestId);
      const exchange = await rawExchange({ port, bytes: first.bytes + second, timeoutMs: 10_000 });
      expect({
        statuses: exchange.statuses,
        bytes: exchange.received.length,
        closed: exchange.closed,
        timedOut: exchange.timedOut,
      }).toEqual({ statuses: [], bytes: 0, closed: true, timedOut: false });

      // The client lost the answer: it sends the same run again, and it is the stored job.
      const retry = await op.hub.run(first.body, TOKEN);
      expect(retry.status).toBe(200);
      const job = (await retry.json()) as { job_id: string; request_id: string };
      expect(job.request_id).toBe(requestId);
      const read = await op.hub.request(`/jobs/${job.job_id}`, { token: TOKEN });
      expect(read.status).toBe(200);
      if (second !== healthz) {
        // The request behind it never ran: the same run now is a new job.
        const behind = await op.hub.run(runRequest("pipelined-second").body, TOKEN);
        expect(behind.status).toBe(202);
      }
    });
  }

  test("behind a request answered at once (GET /healthz), the pipelined ones are answered in order", async () => {
    const last = "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    const exchange = await rawExchange({ port, bytes: `${healthz}${healthz}${last}` });
    expect({
      statuses: exchange.statuses,
      closed: exchange.closed,
      timedOut: exchange.timedOut,
    }).toEqual({ statuses: [200, 200, 200], closed: true, timedOut: false });
  });

  test("the same requests one after the other on one connection (keep-alive) are both answered", async () => {
    const first = runRequest("keep-alive-first");
    // A client that waits for each answer before sending the next: two exchanges, one socket.
    const { connect } = await import("node:net");
    const socket = connect(port, "127.0.0.1");
    const answers: string[] = [];
    let buffer = "";
    const next = () =>
      new Promise<string>((resolve, reject) => {
        const onData = (chunk: Buffer) => {
          buffer += chunk.toString("latin1");
          const end = buffer.indexOf("\r\n\r\n");
          const length = Number(/content-length: (\d+)/i.exec(buffer)?.[1] ?? "0");
          if (end >= 0 && buffer.length >= end + 4 + length) {
            socket.off("data", onData);
            const answer = buffer.slice(0, end + 4 + length);
            buffer = buffer.slice(end + 4 + length);
            resolve(answer);
          }
        };
        socket.on("data", onData);
        socket.once("close", () => reject(new Error("closed")));
      });
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(first.bytes);
    answers.push(await next());
    socket.write(healthz);
    answers.push(await next());
    socket.destroy();
    expect(answers.map((a) => a.slice(0, 12))).toEqual(["HTTP/1.1 202", "HTTP/1.1 200"]);
  });
});
