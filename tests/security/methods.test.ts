import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { PROBLEM_CONTENT_TYPE } from "../../shared/errors/index.ts";
import { CLIENT_TOKENS, type OperatorHub, startOperatorHub } from "../admin/operator-hub.ts";
import { type RawAnswer, rawHttp } from "../helpers/raw-http.ts";

// Request methods (docs/security.md, "Request methods"). A method Bun knows but no route takes
// there is a 405 problem+json with Allow, on the Client API and on the operator surface alike. A
// method token Bun does not know never reaches the hub: Bun closes the connection without an
// answer (oven-sh/bun issues 6556, 21566). That is asserted here exactly, with what it implies:
// nothing of the request ran (no job stored), the hub serves the next connection, no error logged.

let op: OperatorHub;
let port: number;

beforeAll(async () => {
  op = await startOperatorHub();
  port = Number(new URL(op.hub.baseUrl).port);
});
afterAll(() => op?.stop());

const JOB = "job_0123456789abcdefghijkl";

function send(method: string, path: string, extra: readonly string[] = []): Promise<RawAnswer> {
  const head = [`${method} ${path} HTTP/1.1`, "Host: 127.0.0.1", ...extra].join("\r\n");
  return rawHttp({ port, head, timeoutMs: 5_000 });
}

describe("a method Bun knows that no route takes: 405 problem+json with Allow", () => {
  const cases: [string, string, string][] = [
    ["PROPFIND", "/run", "POST"],
    ["PATCH", `/jobs/${JOB}`, "GET, HEAD"],
    ["TRACE", "/healthz", "GET, HEAD"],
    ["PROPFIND", "/admin/v1/jobs", "GET, HEAD"],
    ["PATCH", `/admin/v1/jobs/${JOB}`, "GET, HEAD"],
    ["DELETE", `/admin/v1/jobs/${JOB}/cancel`, "POST"],
    ["GET", `/admin/v1/jobs/${JOB}/retry`, "POST"],
    ["PUT", "/admin/v1/callbacks/redeliver", "POST"],
    ["SEARCH", `/admin/v1/callbacks/${JOB}/redeliver`, "POST"],
    ["DELETE", "/admin/v1/overview", "GET, HEAD"],
    ["PUT", "/console/login", "POST"],
    ["TRACE", "/console/", "GET, HEAD"],
    ["PATCH", "/console/assets/app.js", "GET, HEAD"],
  ];
  for (const [method, path, allow] of cases) {
    test(`${method} ${path}`, async () => {
      const answer = await send(method, path);
      expect({
        status: answer.status,
        type: answer.headers["content-type"],
        allow: answer.headers.allow,
        code: (JSON.parse(answer.body) as { code: string }).code,
      }).toEqual({ status: 405, type: PROBLEM_CONTENT_TYPE, allow, code: "method_not_allowed" });
    });
  }

  test("an unknown path under the operator API is a 404, whatever the method", async () => {
    for (const method of ["GET", "POST", "PROPFIND"]) {
      const answer = await send(method, "/admin/v1/nope");
      expect(answer.status).toBe(404);
      expect(answer.headers["content-type"]).toBe(PROBLEM_CONTENT_TYPE);
    }
  });

  test("HEAD, which Allow lists with GET, is served", async () => {
    for (const path of ["/healthz", "/console/", "/console/state"]) {
      const res = await fetch(`${op.hub.baseUrl}${path}`, { method: "HEAD" });
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
    }
  });
});

describe("a method token Bun does not know: the connection is closed without an answer", () => {
  const body = JSON.stringify({ request_id: "foo-method", route: "demo.echo", input: "x" });
  const runHead = [
    `Authorization: Bearer ${CLIENT_TOKENS.acme}`,
    "Content-Type: application/json",
    `Content-Length: ${body.length}`,
  ];

  for (const method of ["FOO", "BREW", "get", "Post"]) {
    test(`${method} /run, /jobs and /admin/v1/jobs`, async () => {
      for (const path of ["/run", "/jobs", "/admin/v1/jobs"]) {
        const answer = await send(method, path);
        expect({
          path,
          status: answer.status,
          closed: answer.closed,
          timedOut: answer.timedOut,
        }).toEqual({ path, status: 0, closed: true, timedOut: false });
      }
    });
  }

  test("FOO /run with a valid run ran nothing: the same request_id is then a new job (202)", async () => {
    const refused = await rawHttp({
      port,
      head: ["FOO /run HTTP/1.1", "Host: 127.0.0.1", ...runHead].join("\r\n"),
      body: [new TextEncoder().encode(body)],
      timeoutMs: 5_000,
    });
    expect({ status: refused.status, closed: refused.closed }).toEqual({ status: 0, closed: true });
    const res = await op.hub.run(JSON.parse(body), CLIENT_TOKENS.acme);
    expect(res.status).toBe(202);
  });

  test("the hub serves the next connection, and logged no error", async () => {
    expect((await send("GET", "/healthz")).status).toBe(200);
    expect(op.hub.logs()).not.toContain('"level":50');
  });
});
