/**
 * Every body the hub reads goes through the capped reader (shared/http/json-body.ts): the
 * cancel's, the operator API's and the console login's too, not only POST /run's. Bun's own body
 * limit is off on this server, so a reader that took `request.text()` would hold any body, of any
 * size and framing, in memory. Also: the 405s of GET /jobs and the cancel, and the operator API's
 * 401 before its 400.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { hashToken } from "../../shared/auth/index.ts";
import { bodyChunks, type RawAnswer, rawHttp } from "../helpers/raw-http.ts";
import { waitFor } from "../helpers/wait.ts";
import { type SecurityHub, startSecurityHub } from "./hub.ts";
import { expectProblem } from "./problem.ts";

const ACME = { id: "acme", token: "acme-body-token-0123456789abcdef" };
const OPERATOR = "op-olga-body-token-0123456789abcdef";
const MAX_BODY_BYTES = 4096;
/** The operator API's fixed body limit (docs/api.md). */
const ADMIN_MAX_BODY = 64 * 1024;
const JOB = "job_AAAAAAAAAAAAAAAAAAAAAA";
let hub: SecurityHub;
let port = 0;

beforeAll(async () => {
  hub = await startSecurityHub({
    clients: [ACME],
    server: { max_body_bytes: MAX_BODY_BYTES },
    yaml: `
operators:
  - { id: olga, token_sha256: ["${hashToken(OPERATOR)}"], role: operator }
console: { enabled: true, secure_cookie: false }
`,
  });
  port = Number(new URL(hub.baseUrl).port);
});
afterAll(() => hub?.stop());

const head = (line: string, ...headers: string[]) =>
  [line, "Host: 127.0.0.1", ...headers].join("\r\n");

interface Surface {
  readonly name: string;
  readonly head: string;
  readonly limit: number;
  /** What the 413's detail names as the limit's source. */
  readonly limitName: string;
  /** A small body that is read and then refused or accepted by the handler itself. */
  readonly smallBody: string;
  /** The answer to `smallBody` sent chunked: proof the body was read, not refused by size. */
  readonly smallAnswer: readonly [number, string];
}

const SURFACES: readonly Surface[] = [
  {
    name: "POST /jobs/{job_id}/cancel",
    head: head(`POST /jobs/${JOB}/cancel HTTP/1.1`, `Authorization: Bearer ${ACME.token}`),
    limit: MAX_BODY_BYTES,
    limitName: "server.max_body_bytes",
    smallBody: "{}",
    smallAnswer: [404, "job_not_found"],
  },
  {
    name: "POST /console/login (no credential needed to send a body)",
    head: head("POST /console/login HTTP/1.1", "Content-Type: application/json"),
    limit: ADMIN_MAX_BODY,
    limitName: "operator API bodies",
    smallBody: '{"token":"not-an-operator-token"}',
    smallAnswer: [401, "unauthorized"],
  },
  {
    name: "POST /admin/v1/jobs/{job_id}/cancel (an operator action)",
    head: head(
      `POST /admin/v1/jobs/${JOB}/cancel HTTP/1.1`,
      `Authorization: Bearer ${OPERATOR}`,
      "Content-Type: application/json",
    ),
    limit: ADMIN_MAX_BODY,
    limitName: "operator API bodies",
    smallBody: "{}",
    smallAnswer: [404, "job_not_found"],
  },
];

/** A problem+json answer with this status and code, with a body that explains it. */
function expectProblemAnswer(answer: RawAnswer, status: number, code: string) {
  expect({ status: answer.status, timedOut: answer.timedOut }).toEqual({ status, timedOut: false });
  expect(answer.headers["content-type"]).toBe("application/problem+json");
  const problem = JSON.parse(answer.body) as Record<string, unknown>;
  expect(problem).toMatchObject({ status, code });
  return problem;
}

for (const surface of SURFACES) {
  describe(`${surface.name}: the body is read through the capped reader`, () => {
    for (const size of [surface.limit + 1, 20_000_000]) {
      test(`${size} bytes chunked: 413 problem+json naming the limit`, async () => {
        const answer = await rawHttp({
          port,
          head: `${surface.head}\r\nTransfer-Encoding: chunked`,
          body: bodyChunks(size, { chunked: true }),
        });
        const problem = expectProblemAnswer(answer, 413, "payload_too_large");
        expect(problem.detail).toContain(`${surface.limit} bytes (${surface.limitName}`);
      });
    }

    test("a Content-Length of 20 MB: 413 before the body is read", async () => {
      const answer = await rawHttp({ port, head: `${surface.head}\r\nContent-Length: 20000000` });
      expectProblemAnswer(answer, 413, "payload_too_large");
      expect(answer.bodyBytesWritten).toBe(0);
    });

    test("a small chunked body is read and handled", async () => {
      const bytes = Buffer.from(surface.smallBody);
      const answer = await rawHttp({
        port,
        head: `${surface.head}\r\nTransfer-Encoding: chunked`,
        body: [Buffer.from(`${bytes.length.toString(16)}\r\n${surface.smallBody}\r\n0\r\n\r\n`)],
      });
      expectProblemAnswer(answer, ...surface.smallAnswer);
    });
  });
}

describe("a cancel's body", () => {
  const cancel = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${hub.baseUrl}/jobs/${JOB}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${ACME.token}`, ...headers },
      body,
    });

  test("other than none or {}: 400 within the limit, 413 above it", async () => {
    const small = await expectProblem(await cancel('{"reason":"x"}'), 400, "invalid_request");
    expect(small.detail).toBe("A cancel takes no body.");
    await expectProblem(await cancel("x".repeat(MAX_BODY_BYTES)), 400, "invalid_request");
    await expectProblem(await cancel("x".repeat(MAX_BODY_BYTES + 1)), 413, "payload_too_large");
  });

  test("bytes that are not UTF-8 are refused like any other body", async () => {
    const res = await fetch(`${hub.baseUrl}/jobs/${JOB}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${ACME.token}` },
      body: new Uint8Array([0x7b, 0xff, 0x7d]),
    });
    await expectProblem(res, 400, "invalid_request");
  });
});

describe("a client that hangs up mid-body", () => {
  test("on the cancel: logged at info as a disconnect, not as an error", async () => {
    const answer = await rawHttp({
      port,
      head: `${SURFACES[0]?.head}\r\nContent-Length: 1000`,
      body: [Buffer.from("{")],
      timeoutMs: 300,
    });
    expect(answer.timedOut).toBe(true); // the test hung up first
    const line = await waitFor("the disconnect's log line", () =>
      hub
        .logs()
        .split("\n")
        .find((l) => l.includes("client disconnected") && l.includes(`/jobs/${JOB}/cancel`)),
    );
    expect(JSON.parse(line).level).toBe(30);
  });

  test("on the console login: logged at info, and the next login is answered", async () => {
    const answer = await rawHttp({
      port,
      head: `${SURFACES[1]?.head}\r\nContent-Length: 1000`,
      body: [Buffer.from('{"token":')],
      timeoutMs: 300,
    });
    expect(answer.timedOut).toBe(true);
    const line = await waitFor("the disconnect's log line", () =>
      hub
        .logs()
        .split("\n")
        .find((l) => l.includes("client disconnected") && l.includes("/console/login")),
    );
    expect(JSON.parse(line).level).toBe(30);
    const next = await rawHttp({
      port,
      head: `${SURFACES[1]?.head}\r\nContent-Length: 2`,
      body: [Buffer.from("{}")],
    });
    expectProblemAnswer(next, 400, "invalid_request");
  });
});

describe("405 with Allow on every Client API path", () => {
  const cases: [string, string, string][] = [
    ["DELETE", "/jobs", "GET, HEAD"],
    ["POST", "/jobs", "GET, HEAD"],
    ["GET", `/jobs/${JOB}/cancel`, "POST"],
    ["PUT", `/jobs/${JOB}/cancel`, "POST"],
  ];
  for (const [method, path, allow] of cases) {
    test(`${method} ${path}`, async () => {
      const res = await fetch(`${hub.baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${ACME.token}` },
      });
      await expectProblem(res, 405, "method_not_allowed");
      expect(res.headers.get("allow")).toBe(allow);
    });
  }
});

describe("the operator API authenticates before it validates", () => {
  const failed = (token?: string) =>
    fetch(`${hub.baseUrl}/admin/v1/callbacks/failed?callback=delivered`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });

  test("a bad ?callback= without credentials, or with a client token: 401", async () => {
    await expectProblem(await failed(), 401, "unauthorized");
    await expectProblem(await failed(ACME.token), 401, "unauthorized");
  });

  test("the same with an operator token: 400 naming callback", async () => {
    const problem = await expectProblem(await failed(OPERATOR), 400, "invalid_request");
    expect(problem.errors).toEqual([
      { pointer: "/query/callback", message: "is always 'failed' here" },
    ]);
  });
});

test("nothing above logged an error", () => {
  expect(hub.logs()).not.toContain('"level":50');
});
