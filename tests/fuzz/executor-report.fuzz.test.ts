import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { hashToken } from "../../shared/auth/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { startTaskServer, type TaskServer } from "../executor/helpers.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { FUZZ_SEED, fuzzRuns, fuzzTimeoutMs } from "./settings.ts";

// POST /executor/v1/jobs/{id}/events with generated bodies: unusual Unicode in every string,
// extreme numbers, deep and wide outputs, wrong shapes. Against jobs that an HTTP executor
// accepted (202): never a 5xx; a refusal is problem+json; 200 only for a body docs/executors.md
// allows, and then the job shows what was reported.

const TOKEN = "executor-fuzz-token-0123456789abcdef";
const CLIENT = { id: "ops", token: "ops-fuzz-token-0123456789abcdef", routes: ["x.*"] };
let server: TaskServer;
let hub: TestHub;
const jobs: string[] = [];

beforeAll(async () => {
  server = startTaskServer(() => new Response(null, { status: 202 }));
  hub = await startHub({
    clients: [CLIENT],
    services: ["ingress", "projector", "executor"],
    yaml: `
routes:
  - key: x.async
    executor:
      kind: http
      url: ${server.url}
      secret: "${generateWebhookSecret()}"
      token_sha256: ["${hashToken(TOKEN)}"]
`,
  });
  for (let i = 0; i < 40; i++) {
    const res = await hub.run(
      { request_id: `rep-${i}`, route: "x.async", input: "x" },
      CLIENT.token,
    );
    jobs.push(((await res.json()) as { job_id: string }).job_id);
  }
  // Reports are accepted once the dispatcher has recorded the job (before it POSTs the task).
  const deadline = Date.now() + 20_000;
  while (server.received.length < jobs.length && Date.now() < deadline) await Bun.sleep(50);
});
afterAll(async () => {
  await hub?.stop();
  await server?.stop();
});

const UNUSUAL = [
  "\ud800",
  "a\udc00",
  "cafe\u0301",
  "\u202eevil",
  "\u200b\ufeff",
  "\u0000\u001f",
  "😀",
];
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(...UNUSUAL),
  fc.string({ unit: "binary", maxLength: 8 }),
  fc.constantFrom("", "c".repeat(64), "c".repeat(65), "m".repeat(2001)),
);
const NUMBERS = ["1e400", "12345678901234567890", "1e-400", "1e20", "-0", "0.1"];
const deep = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
const output = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? "null"),
  fc.constantFrom(...NUMBERS).map((n) => `{"n":${n}}`),
  fc.constantFrom(deep(63), deep(64), deep(65), deep(5000)),
  fc.dictionary(text, text, { maxKeys: 4 }).map((v) => JSON.stringify(v)),
  fc.nat(3000).map((n) => JSON.stringify(Array.from({ length: n }, (_, i) => i))),
);
const body = fc.oneof(
  fc.constant('{"type":"running"}'),
  output.map((o) => `{"type":"done","output":${o}}`),
  fc
    .tuple(fc.constantFrom("error", "rejected"), text, text)
    .map(([type, code, message]) => JSON.stringify({ type, error: { code, message } })),
  fc.constantFrom(
    '{"type":"done"}',
    '{"type":"bogus"}',
    '{"type":"running","x":1}',
    "[]",
    "nul",
    "",
  ),
);

describe(`executor reports (${fuzzRuns(150)} runs, seed ${FUZZ_SEED})`, () => {
  test(
    "never 5xx; refusals are problem+json; 200 only for documented bodies",
    async () => {
      const seen = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(fc.nat(jobs.length - 1), body, async (i, text) => {
          const res = await fetch(`${hub.baseUrl}/executor/v1/jobs/${jobs[i]}/events`, {
            method: "POST",
            headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
            body: text,
          });
          const raw = await res.text();
          seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
          expect({ status: res.status, below500: res.status < 500, text }).toMatchObject({
            below500: true,
          });
          if (res.status >= 400) {
            expect(res.headers.get("content-type")).toBe("application/problem+json");
            expect(JSON.parse(raw).status).toBe(res.status);
          }
          if (res.status === 200) {
            // Whatever was accepted is well-formed Unicode, shallow enough, and numerically exact.
            expect(text.includes("\\ud800") || text.includes("\\udc00")).toBe(false);
            expect(/1e400|1e-400|12345678901234567890|\[{65}/.test(text)).toBe(false);
          }
        }),
        { seed: FUZZ_SEED, numRuns: fuzzRuns(150), endOnFailure: true },
      );
      process.stdout.write(
        `executor reports: ${[...seen.entries()]
          .sort()
          .map(([k, v]) => `${k} ×${v}`)
          .join(", ")}\n`,
      );
      expect(hub.logs()).not.toContain('"level":50');
    },
    fuzzTimeoutMs(150),
  );
});
