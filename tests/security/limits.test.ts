import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type SecurityHub, startSecurityHub } from "./hub.ts";
import { expectProblem } from "./problem.ts";

const ACME = { id: "acme", token: "acme-token-0123456789abcdef" };
const MAX_HEADER_BYTES = 4096;
const MAX_BODY_BYTES = 4096;
const MAX_URL = 512;
let hub: SecurityHub;
let n = 0;

beforeAll(async () => {
  hub = await startSecurityHub({
    clients: [ACME],
    server: {
      max_header_bytes: MAX_HEADER_BYTES,
      max_body_bytes: MAX_BODY_BYTES,
      max_url_length: MAX_URL,
    },
  });
});
afterAll(() => hub?.stop());

const run = (body: string | ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
  fetch(`${hub.baseUrl}/run`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${ACME.token}`,
      "content-type": "application/json",
      ...headers,
    },
    body,
  });

/** A body stream without Content-Length (chunked), so only the bytes themselves can be counted. */
function chunked(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close();
      controller.enqueue(bytes.subarray(offset, offset + 1024));
      offset += 1024;
    },
  });
}

const body = (input: string) =>
  JSON.stringify({ request_id: `lim-${n++}`, route: "demo.small", input });

describe("request limits, each with its own answer", () => {
  test("headers under the limit pass; above it 431 problem+json; above Bun's 16 KiB a bare 431", async () => {
    const ok = await run(body("hi"), { "x-pad": "a".repeat(MAX_HEADER_BYTES / 2) });
    expect(ok.status).toBe(202);
    const ours = await run(body("hi"), { "x-pad": "a".repeat(MAX_HEADER_BYTES) });
    const problem = await expectProblem(ours, 431, "headers_too_large");
    expect(problem.detail).toContain(String(MAX_HEADER_BYTES));
    // Bun refuses headers above 16 KiB itself, before any handler runs: no problem body there.
    const buns = await run(body("hi"), { "x-pad": "a".repeat(20_000) });
    expect(buns.status).toBe(431);
    expect(await buns.text()).toBe("");
  });

  test("many small headers count together", async () => {
    const many: Record<string, string> = {};
    for (let i = 0; i < 60; i++) many[`x-h${i}`] = "v".repeat(80);
    await expectProblem(await run(body("hi"), many), 431, "headers_too_large");
  });

  test("a body above max_body_bytes is 413, with or without Content-Length", async () => {
    const big = body("x".repeat(MAX_BODY_BYTES));
    await expectProblem(await run(big), 413, "payload_too_large");
    await expectProblem(await run(chunked(big)), 413, "payload_too_large");
    // A streamed body under the limit is read normally.
    expect((await run(chunked(body("small")))).status).toBe(202);
  });

  test("far above the limit the answer is still a 413 problem (tests/security/http-edge.test.ts)", async () => {
    const huge = "x".repeat(2 * MAX_BODY_BYTES + 70_000);
    await expectProblem(await run(chunked(huge)), 413, "payload_too_large");
    await expectProblem(await run(huge), 413, "payload_too_large");
  });

  test("a URL above max_url_length is 414, before authentication", async () => {
    const res = await fetch(`${hub.baseUrl}/jobs/${"a".repeat(MAX_URL)}`);
    await expectProblem(res, 414, "uri_too_long");
  });

  test("input is limited in UTF-8 bytes, not characters (route demo.small: 16 bytes)", async () => {
    expect((await run(body("é".repeat(8)))).status).toBe(202);
    const refused = await expectProblem(await run(body("é".repeat(9))), 400, "invalid_request");
    expect(refused.errors).toEqual([{ pointer: "/input", message: "must be at most 16 bytes" }]);
  });
});
