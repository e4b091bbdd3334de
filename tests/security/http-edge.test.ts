import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { bodyChunks, type RawAnswer, rawHttp } from "../helpers/raw-http.ts";
import { type SecurityHub, startSecurityHub } from "./hub.ts";

const ACME = { id: "acme", token: "acme-token-0123456789abcdef" };
const MAX_BODY_BYTES = 4096;
let hub: SecurityHub;
let port = 0;

beforeAll(async () => {
  hub = await startSecurityHub({
    clients: [ACME],
    server: { max_body_bytes: MAX_BODY_BYTES },
  });
  port = Number(new URL(hub.baseUrl).port);
});
afterAll(() => hub?.stop());

const RUN_HEAD = [
  "POST /run HTTP/1.1",
  "Host: 127.0.0.1",
  `Authorization: Bearer ${ACME.token}`,
  "Content-Type: application/json",
].join("\r\n");

/** A problem+json answer with this status and code, and nothing of Bun's error page in it. */
function expectProblemAnswer(answer: RawAnswer, status: number, code: string): void {
  expect({ status: answer.status, timedOut: answer.timedOut }).toEqual({ status, timedOut: false });
  expect(answer.headers["content-type"]).toBe("application/problem+json");
  const problem = JSON.parse(answer.body) as Record<string, unknown>;
  expect(problem).toMatchObject({ status, code });
  expect(answer.body).not.toContain("<html");
  expect(answer.body).not.toContain("/work/");
}

describe("oversized bodies: 413 problem+json whatever the size and framing", () => {
  const sizes = [MAX_BODY_BYTES + 1, 200_000, 20_000_000];
  for (const size of sizes) {
    test(`${size} bytes with Content-Length`, async () => {
      const answer = await rawHttp({
        port,
        head: `${RUN_HEAD}\r\nContent-Length: ${size}`,
        body: bodyChunks(size),
      });
      expectProblemAnswer(answer, 413, "payload_too_large");
      expect(JSON.parse(answer.body).detail).toContain("server.max_body_bytes");
    });
    test(`${size} bytes chunked`, async () => {
      const answer = await rawHttp({
        port,
        head: `${RUN_HEAD}\r\nTransfer-Encoding: chunked`,
        body: bodyChunks(size, { chunked: true }),
      });
      expectProblemAnswer(answer, 413, "payload_too_large");
    });
  }

  test("a Content-Length of a terabyte is answered before any body byte", async () => {
    const answer = await rawHttp({ port, head: `${RUN_HEAD}\r\nContent-Length: 1000000000000` });
    expectProblemAnswer(answer, 413, "payload_too_large");
    expect(answer.bodyBytesWritten).toBe(0);
  });

  test("the connection stays usable after a 413 (the rest of the body is discarded)", async () => {
    const first = await fetch(`${hub.baseUrl}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${ACME.token}`, "content-type": "application/json" },
      body: "x".repeat(100_000),
    });
    expect(first.status).toBe(413);
    await first.text();
    const again = await fetch(`${hub.baseUrl}/healthz`);
    expect(again.status).toBe(200);
  });
});

describe("malformed requests get a plain 4xx problem, never Bun's error page", () => {
  const cases: [string, string, number, string][] = [
    ["a Host that is no host name", "GET /jobs/x HTTP/1.1\r\nHost: a b", 400, "bad_request"],
    ["a Host with a stray %", "GET /nope HTTP/1.1\r\nHost: exa%mple", 400, "bad_request"],
    ["an unclosed IPv6 Host", "GET /healthz HTTP/1.1\r\nHost: [::1", 400, "bad_request"],
    [
      "an absolute-form target: answered for this host's path, never proxied",
      "GET http://evil.example/run HTTP/1.1\r\nHost: 127.0.0.1",
      405,
      "method_not_allowed",
    ],
    ["a Host with a path", "GET /healthz HTTP/1.1\r\nHost: a/b", 400, "bad_request"],
    [
      "a CONNECT target",
      "CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443",
      405,
      "method_not_allowed",
    ],
    ["PROPFIND on /run", "PROPFIND /run HTTP/1.1\r\nHost: x", 405, "method_not_allowed"],
    ["DELETE on a job", "DELETE /jobs/job_x HTTP/1.1\r\nHost: x", 405, "method_not_allowed"],
    ["GET on /run", "GET /run HTTP/1.1\r\nHost: x", 405, "method_not_allowed"],
    ["an unknown path", "GET /../../etc/passwd HTTP/1.1\r\nHost: x", 404, "not_found"],
  ];
  for (const [name, head, status, code] of cases) {
    test(name, async () => {
      const answer = await rawHttp({ port, head, timeoutMs: 5_000 });
      expectProblemAnswer(answer, status, code);
      if (status === 405) expect(answer.headers.allow).toBeString();
    });
  }

  test("a Host's verdict is remembered, never mixed up: the same bad Host is refused again, a good one served", async () => {
    for (let i = 0; i < 3; i++) {
      expectProblemAnswer(
        await rawHttp({ port, head: "GET /healthz HTTP/1.1\r\nHost: a/b", timeoutMs: 5_000 }),
        400,
        "bad_request",
      );
      const good = await rawHttp({ port, head: "GET /healthz HTTP/1.1\r\nHost: a" });
      expect(good.status).toBe(200);
    }
  });

  test("an absolute-form target is served like its path (RFC 9112 3.2.2), not forwarded", async () => {
    const answer = await rawHttp({
      port,
      head: "GET http://evil.example/healthz HTTP/1.1\r\nHost: 127.0.0.1",
    });
    expect({ status: answer.status, body: answer.body }).toEqual({
      status: 200,
      body: '{"status":"ok"}',
    });
  });

  test("none of them logged an error", () => {
    expect(hub.logs()).not.toContain('"level":50');
  });
});

describe("a client that goes away", () => {
  test("mid-body is logged at info, not as an error", async () => {
    const answer = await rawHttp({
      port,
      head: `${RUN_HEAD}\r\nContent-Length: 1000`,
      body: [Buffer.from('{"request_id":')],
      timeoutMs: 300,
    });
    expect(answer.timedOut).toBe(true); // the test hung up first
    const deadline = Date.now() + 5_000;
    while (!hub.logs().includes("client disconnected") && Date.now() < deadline) {
      await Bun.sleep(20);
    }
    const line = hub
      .logs()
      .split("\n")
      .find((l) => l.includes("client disconnected"));
    expect(line).toBeDefined();
    expect(JSON.parse(line as string).level).toBe(30);
    expect(hub.logs()).not.toContain('"level":50');
  });
});
