import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { PROBLEM_CONTENT_TYPE } from "../../shared/errors/index.ts";
import {
  CLIENT_TOKENS,
  OPERATOR_TOKENS,
  type OperatorHub,
  startOperatorHub,
} from "../admin/operator-hub.ts";
import { rawHttp } from "../helpers/raw-http.ts";
import { FUZZ_SEED, fuzzRuns, fuzzTimeoutMs } from "./settings.ts";

// Every path parameter of both APIs (Client API, executor reports, operator API, console) with
// percent-encodings that do not decode to UTF-8: a lone `%`, bad hex, bytes that are not UTF-8,
// overlong forms, encoded surrogates. Each answer is a 404 problem+json (a job id's own
// `job_not_found`), with or without credentials, never a 5xx. Sent on a raw socket, so the bytes
// reach the server exactly as generated.

let op: OperatorHub;
let port: number;

beforeAll(async () => {
  op = await startOperatorHub();
  port = Number(new URL(op.hub.baseUrl).port);
});
afterAll(() => op?.stop());

const CLIENT = `Bearer ${CLIENT_TOKENS.acme}`;
const OPERATOR = `Bearer ${OPERATOR_TOKENS.alice}`;
const EXECUTOR = "Bearer not-an-executor-token-0123456789";

/** A templated path (`{}` is the parameter), its method, and what passes its authentication. */
interface Endpoint {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly auth: string | null;
  /** The problem's code for an undecodable parameter. */
  readonly code: string;
}

const ENDPOINTS: readonly Endpoint[] = [
  { method: "GET", path: "/jobs/{}", auth: CLIENT, code: "job_not_found" },
  { method: "POST", path: "/jobs/{}/cancel", auth: CLIENT, code: "job_not_found" },
  { method: "POST", path: "/executor/v1/jobs/{}/events", auth: EXECUTOR, code: "job_not_found" },
  { method: "GET", path: "/admin/v1/jobs/{}", auth: OPERATOR, code: "job_not_found" },
  { method: "POST", path: "/admin/v1/jobs/{}/cancel", auth: OPERATOR, code: "job_not_found" },
  { method: "POST", path: "/admin/v1/jobs/{}/retry", auth: OPERATOR, code: "job_not_found" },
  {
    method: "POST",
    path: "/admin/v1/callbacks/{}/redeliver",
    auth: OPERATOR,
    code: "job_not_found",
  },
  { method: "GET", path: "/console/assets/{}", auth: null, code: "not_found" },
];

/** The sequences named in issue 30, then more that no UTF-8 decoder accepts. */
const NAMED = ["%ff", "%e9", "%C0%AF", "%"];
const INVALID = [
  ...NAMED,
  "%f",
  "%zz",
  "%%",
  "%g0",
  "%80",
  "%c3",
  "%e2%82",
  "%ED%A0%80",
  "%F8%88%80%80%80",
  "%F4%90%80%80",
  "%E0%80%AF",
  "%FE",
];
const plain = fc.stringMatching(/^[A-Za-z0-9_-]{0,8}$/);
const invalidParam = fc
  .tuple(plain, fc.constantFrom(...INVALID), plain, fc.constantFrom("", ...INVALID))
  .map((parts) => parts.join(""))
  // Pieces can join into a valid encoding ("%" + "0a", "%e2%82" + "%80"): those are not sent.
  .filter((param) => {
    try {
      decodeURIComponent(param);
      return false;
    } catch {
      return true;
    }
  });

async function send(
  endpoint: Endpoint,
  param: string,
  withAuth: boolean,
): Promise<{ status: number; type: string; code: string }> {
  const lines = [
    `${endpoint.method} ${endpoint.path.replace("{}", param)} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    "Connection: close",
    ...(withAuth && endpoint.auth ? [`Authorization: ${endpoint.auth}`] : []),
    ...(endpoint.method === "POST" ? ["Content-Type: application/json", "Content-Length: 2"] : []),
  ];
  const answer = await rawHttp({
    port,
    head: lines.join("\r\n"),
    ...(endpoint.method === "POST" ? { body: [new TextEncoder().encode("{}")] } : {}),
    timeoutMs: 10_000,
  });
  let code = "";
  try {
    code = (JSON.parse(answer.body) as { code?: string }).code ?? "";
  } catch {
    code = `(not JSON: ${answer.body.slice(0, 80)})`;
  }
  return { status: answer.status, type: answer.headers["content-type"] ?? "", code };
}

describe("path parameters that do not decode", () => {
  for (const endpoint of ENDPOINTS) {
    test(`${endpoint.method} ${endpoint.path}: the named ids answer 404 problem+json`, async () => {
      for (const param of NAMED) {
        for (const withAuth of [true, false]) {
          const answer = await send(endpoint, param, withAuth);
          expect({ param, withAuth, ...answer }).toEqual({
            param,
            withAuth,
            status: 404,
            type: PROBLEM_CONTENT_TYPE,
            code: endpoint.code,
          });
        }
      }
    });
  }

  test(
    "every path parameter, generated encodings: 404 problem+json, never a 5xx",
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...ENDPOINTS),
          invalidParam,
          fc.boolean(),
          async (endpoint, param, withAuth) => {
            const answer = await send(endpoint, param, withAuth);
            expect({ ...answer, status: answer.status }).toEqual({
              status: 404,
              type: PROBLEM_CONTENT_TYPE,
              code: endpoint.code,
            });
          },
        ),
        { seed: FUZZ_SEED, numRuns: fuzzRuns(200) },
      );
    },
    fuzzTimeoutMs(200),
  );

  test("the operator API's catch-all answers a problem for an undecodable segment", async () => {
    for (const param of NAMED) {
      const answer = await send(
        { method: "GET", path: "/admin/v1/{}", auth: OPERATOR, code: "not_found" },
        param,
        true,
      );
      expect(answer.status).toBeLessThan(500);
      expect(answer.type).toBe(PROBLEM_CONTENT_TYPE);
    }
  });
});
