import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type SecurityHub, startSecurityHub } from "./hub.ts";
import { expectProblem } from "./problem.ts";

const ACME = { id: "acme", token: "acme-token-0123456789abcdef" };
let hub: SecurityHub;
let n = 0;

beforeAll(async () => {
  hub = await startSecurityHub({ clients: [ACME] });
});
afterAll(() => hub?.stop());

const post = (text: string) =>
  fetch(`${hub.baseUrl}/run`, {
    method: "POST",
    headers: { authorization: `Bearer ${ACME.token}`, "content-type": "application/json" },
    body: text,
  });

/** A run body with `metadata` spliced in as raw JSON text, so literals arrive exactly as written. */
const withMetadata = (metadataText: string, requestId = `json-${n++}`) =>
  `{"request_id":${JSON.stringify(requestId)},"route":"demo.echo","input":"hi","metadata":${metadataText}}`;

describe("metadata limits: 400 naming the limit, never a stack overflow", () => {
  test("10,000 levels of nesting (arrays and objects) → 400 naming server.metadata.max_depth", async () => {
    for (const deep of [
      `{"a":${"[".repeat(10_000)}${"]".repeat(10_000)}}`,
      `${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}`,
    ]) {
      const problem = await expectProblem(await post(withMetadata(deep)), 400, "invalid_request");
      expect(problem.detail).toContain("server.metadata.max_depth");
      expect((problem.errors as { pointer: string }[])[0]?.pointer).toStartWith("/metadata/a");
    }
  });

  test("16 levels pass, 17 do not", async () => {
    const nest = (levels: number) => `${'{"a":'.repeat(levels - 1)}{}${"}".repeat(levels - 1)}`;
    expect((await post(withMetadata(nest(16)))).status).toBe(202);
    await expectProblem(await post(withMetadata(nest(17))), 400, "invalid_request");
  });

  test("more than 256 members in all → 400 naming server.metadata.max_members", async () => {
    const wide = JSON.stringify({ list: Array.from({ length: 300 }, (_, i) => i) });
    const problem = await expectProblem(await post(withMetadata(wide)), 400, "invalid_request");
    expect(problem.detail).toContain("server.metadata.max_members");
    const fits = JSON.stringify({ list: Array.from({ length: 255 }, (_, i) => i) });
    expect((await post(withMetadata(fits))).status).toBe(202);
  });

  test("a string or member name above 4096 characters → 400 naming server.metadata.max_string_length", async () => {
    for (const meta of [{ note: "x".repeat(4097) }, { ["k".repeat(4097)]: 1 }]) {
      const problem = await expectProblem(
        await post(withMetadata(JSON.stringify(meta))),
        400,
        "invalid_request",
      );
      expect(problem.detail).toContain("server.metadata.max_string_length");
    }
  });

  test("deep JSON outside metadata is refused for what it is, without a 500", async () => {
    const deep = `${"[".repeat(50_000)}${"]".repeat(50_000)}`;
    for (const body of [
      deep,
      `{"request_id":"x","route":"demo.echo","input":${deep}}`,
      `{"request_id":"x","route":"demo.echo","input":"x","extra":${deep}}`,
    ]) {
      const res = await post(body);
      expect(res.status).toBe(400);
      await res.text();
    }
  });
});

describe("numbers JSON can carry but a JavaScript number cannot keep", () => {
  const refused = ["1e400", "-1e400", "1e-400", "12345678901234567890", "0.1000000000000000000001"];
  for (const literal of refused) {
    test(`${literal} is refused, naming the literal`, async () => {
      const problem = await expectProblem(
        await post(withMetadata(`{"n":${literal}}`)),
        400,
        "invalid_request",
      );
      expect(problem.detail).toContain(literal);
    });
  }
  const kept = ["1e20", "0.1", "-0", "5e-324", "1.7976931348623157e308", "1E2", "9007199254740992"];
  for (const literal of kept) {
    test(`${literal} is kept as the same number`, async () => {
      const res = await post(withMetadata(`{"n":${literal}}`));
      expect(res.status).toBe(202);
    });
  }
  test("9007199254740993 (2^53 + 1) loses its last digit in a double: refused", async () => {
    await expectProblem(await post(withMetadata(`{"n":9007199254740993}`)), 400, "invalid_request");
  });
});

describe("strings: Unicode as sent, unpaired surrogates refused", () => {
  for (const field of ["request_id", "input"] as const) {
    test(`an unpaired surrogate in ${field} → 400 naming /${field}`, async () => {
      const body = { request_id: `s-${n++}`, route: "demo.echo", input: "ok", [field]: "a\ud800b" };
      const problem = await expectProblem(await post(JSON.stringify(body)), 400, "invalid_request");
      expect((problem.errors as { pointer: string }[])[0]?.pointer).toBe(`/${field}`);
    });
  }

  test("an unpaired surrogate in a metadata value or member name → 400", async () => {
    for (const meta of ['{"note":"\\udc00"}', '{"\\ud800x":1}']) {
      await expectProblem(await post(withMetadata(meta)), 400, "invalid_request");
    }
  });

  test("NFC and NFD spellings of a request_id are two requests; bidi controls are kept", async () => {
    const nfc = `caf\u00e9-${n++}`;
    const nfd = nfc.normalize("NFD");
    const a = await post(JSON.stringify({ request_id: nfc, route: "demo.echo", input: "x" }));
    const b = await post(JSON.stringify({ request_id: nfd, route: "demo.echo", input: "x" }));
    expect([a.status, b.status]).toEqual([202, 202]);
    const jobA = (await a.json()) as { job_id: string };
    const jobB = (await b.json()) as { job_id: string };
    expect(jobA.job_id).not.toBe(jobB.job_id);
    const bidi = `\u202eevil\u202c-${n++}`;
    const c = await post(
      JSON.stringify({ request_id: bidi, route: "demo.echo", input: "\u2067x" }),
    );
    expect(c.status).toBe(202);
    const job = (await c.json()) as { request_id: string };
    expect(job.request_id).toBe(bidi);
  });
});
