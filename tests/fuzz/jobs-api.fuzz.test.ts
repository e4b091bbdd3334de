import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import fc from "fast-check";
import { JOB_STATUSES } from "../../shared/domain/index.ts";
import { JOB_ID_PATTERN } from "../../shared/ids/index.ts";
import { encodeCursor } from "../../shared/search/index.ts";
import { waitFor } from "../helpers/wait.ts";
import { type SecurityHub, startSecurityHub } from "../security/hub.ts";
import { FUZZ_SEED, fuzzRuns, fuzzTimeoutMs } from "./settings.ts";

// GET /jobs query strings and POST /jobs/{job_id}/cancel bodies against a model: every answer is
// the one the model predicts (200 only for a query of valid parameters, else 400 naming one; a
// cancel's 404 / 413 / 400 / 409 in the order the handler checks them), never a 5xx, never a hang,
// and a list never shows another client's job.

const CLIENTS = {
  acme: "acme-fuzz-jobs-token-0123456789abcdef",
  globex: "globex-fuzz-jobs-token-0123456789abcdef",
} as const;
type ClientId = keyof typeof CLIENTS;
const MAX_BODY = 4096;
const LIST_RUNS = 200;
const CANCEL_RUNS = 150;
let hub: SecurityHub;
/** Each client's jobs, all finished (demo.echo). */
const jobsOf: Record<ClientId, string[]> = { acme: [], globex: [] };

beforeAll(async () => {
  hub = await startSecurityHub({
    clients: Object.entries(CLIENTS).map(([id, token]) => ({ id, token })),
    server: { max_body_bytes: MAX_BODY, auth_failures_per_minute: 1_000_000 },
    services: ["ingress", "projector", "indexer", "executor"],
  });
  for (const client of Object.keys(CLIENTS) as ClientId[]) {
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${hub.baseUrl}/run`, {
        method: "POST",
        headers: { authorization: `Bearer ${CLIENTS[client]}`, "content-type": "application/json" },
        body: JSON.stringify({ request_id: `seed-${i}`, route: "demo.echo", input: "x" }),
      });
      expect(res.status).toBe(202);
      jobsOf[client].push(((await res.json()) as { job_id: string }).job_id);
    }
  }
  // Finished before any cancel, so the model knows each answer (409 job_final, never a 202).
  for (const client of Object.keys(CLIENTS) as ClientId[]) {
    for (const id of jobsOf[client]) {
      await waitFor(`${id} done`, async () => {
        const res = await fetch(`${hub.baseUrl}/jobs/${id}`, {
          headers: { authorization: `Bearer ${CLIENTS[client]}` },
        });
        return ((await res.json()) as { status: string }).status === "done";
      });
    }
    // Listed too, so a list that leaked another client's jobs could show it.
    await waitFor(`${client}'s jobs indexed`, async () => {
      const res = await fetch(`${hub.baseUrl}/jobs`, {
        headers: { authorization: `Bearer ${CLIENTS[client]}` },
      });
      return ((await res.json()) as { jobs: unknown[] }).jobs.length === 3;
    });
  }
});
afterAll(() => hub?.stop());

const client = fc.constantFrom<ClientId>("acme", "globex");
const anyJobId = fc.stringMatching(/^job_[A-Za-z0-9_-]{22}$/);

/** One `name=value` pair of a query, as sent, and whether it is valid on its own. */
interface Pair {
  readonly name: string;
  readonly raw: string;
  readonly valid: boolean;
}
/** Percent-encoded; a lone surrogate has no encoding (RAW_GARBAGE sends its WTF-8 bytes). */
const encode = (value: string) => encodeURIComponent(value.toWellFormed());
const ok = (name: string) => (value: string) => ({
  name,
  raw: `${name}=${encode(value)}`,
  valid: true,
});
const bad = (name: string) => (value: string) => ({
  name,
  raw: `${name}=${encode(value)}`,
  valid: false,
});
/** Raw text after `name=` that no parameter accepts, decoded however the server decodes it. */
const RAW_GARBAGE = ["", "%ZZ", "%", "%ED%A0%80", "%00", "%E2%80%AE", "%EF%BF%BF", "+", "a%26b"];
const NAMES = ["status", "route", "created_after", "created_before", "limit", "cursor"];
const strange = fc.oneof(
  fc.string({ unit: "grapheme", maxLength: 30 }),
  fc.string({ unit: "binary", maxLength: 30 }),
  fc.constantFrom("\uD800", "e\u0301", "\u00e9", "\u202edone", "１", "0x10", "1e2", "-1", "NaN"),
);

const pair: fc.Arbitrary<Pair> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...JOB_STATUSES).map(ok("status")) },
  { weight: 2, arbitrary: fc.constantFrom("demo.echo", "x", "a.b-c_d").map(ok("route")) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.constantFrom("created_after", "created_before"),
        fc.date({ min: new Date(0), max: new Date("9999-12-31T00:00:00Z"), noInvalidDate: true }),
      )
      .map(([name, d]) => ok(name)(d.toISOString())),
  },
  { weight: 2, arbitrary: fc.integer({ min: 1, max: 500 }).map(String).map(ok("limit")) },
  {
    weight: 1,
    arbitrary: fc
      .record({ createdMs: fc.integer({ min: 0, max: 999_999_999_999_999 }), jobId: anyJobId })
      .map((p) => ok("cursor")(encodeCursor(p))),
  },
  // Invalid values of known parameters.
  { weight: 1, arbitrary: fc.constantFrom("0", "501", "1.5", "01e1", "-3").map(bad("limit")) },
  { weight: 1, arbitrary: fc.constantFrom("DONE", "cancelled", "done ").map(bad("status")) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("Demo.echo", ".x", "x..y", "a".repeat(129)).map(bad("route")),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom("created_after", "created_before"),
        fc.constantFrom("2026-01-31", "2026-13-01T00:00:00Z", "2026-01-01T00:00:00+99:99", "now"),
      )
      .map(([name, v]) => bad(name)(v)),
  },
  { weight: 1, arbitrary: fc.constantFrom("x", "AAAA", "a".repeat(300)).map(bad("cursor")) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom(...NAMES), strange).map(([name, v]) => {
      const p = bad(name)(v);
      // A few strange strings are valid after all (a route key such as "x").
      const sent = v.toWellFormed();
      return { ...p, valid: name === "route" && /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(sent) };
    }),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(...NAMES), fc.constantFrom(...RAW_GARBAGE))
      .map(([name, g]) => ({ name, raw: `${name}=${g}`, valid: false })),
  },
  // Unknown names, and names that only look known.
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.constantFrom("Status", "status ", "client", "job_id", "limit[]", "%73tatus", ""),
        fc.stringMatching(/^[a-z_]{1,12}$/).filter((n) => !NAMES.includes(n)),
      )
      .map((name) => ({
        // "%73tatus" decodes to "status": a known name with a value.
        name: name === "%73tatus" ? "status" : name,
        raw: `${name}=done`,
        valid: name === "%73tatus",
      })),
  },
);

/** The model: 200 iff every pair is valid and no single-valued parameter repeats. */
function expectedListStatus(pairs: readonly Pair[]): number {
  const counts = new Map<string, number>();
  for (const p of pairs) counts.set(p.name, (counts.get(p.name) ?? 0) + 1);
  const single = ["created_after", "created_before", "limit", "cursor"];
  const repeated = single.some((n) => (counts.get(n) ?? 0) > 1);
  return pairs.every((p) => p.valid) && !repeated ? 200 : 400;
}

const classes = new Map<string, number>();
const count = (key: string) => classes.set(key, (classes.get(key) ?? 0) + 1);
const report = (what: string) => {
  const total = [...classes.values()].reduce((a, b) => a + b, 0);
  const parts = [...classes.entries()].sort().map(([k, v]) => `${k} ×${v}`);
  process.stdout.write(`${what}: ${total} requests: ${parts.join(", ")}\n`);
  classes.clear();
  return total;
};

describe(`GET /jobs and POST /jobs/{job_id}/cancel (seed ${FUZZ_SEED})`, () => {
  test(
    `GET /jobs query strings (${fuzzRuns(LIST_RUNS)} runs): the model's answer, only the caller's jobs`,
    async () => {
      const arbitrary = fc.record({ client, pairs: fc.array(pair, { maxLength: 4 }) });
      await fc.assert(
        fc.asyncProperty(arbitrary, async ({ client: who, pairs }) => {
          const query = pairs.map((p) => p.raw).join("&");
          const res = await fetch(`${hub.baseUrl}/jobs${query ? `?${query}` : ""}`, {
            headers: { authorization: `Bearer ${CLIENTS[who]}` },
            signal: AbortSignal.timeout(5_000),
          });
          const body = (await res.json()) as Record<string, unknown>;
          expect({ query, status: res.status }).toEqual({
            query,
            status: expectedListStatus(pairs),
          });
          count(String(res.status));
          if (res.status === 400) {
            expect(res.headers.get("content-type")).toBe("application/problem+json");
            const errors = body.errors as { pointer: string }[];
            expect(errors[0]?.pointer).toStartWith("/query/");
            return;
          }
          const jobs = body.jobs as { job_id: string }[];
          for (const job of jobs) expect(jobsOf[who]).toContain(job.job_id);
          expect(Number.isInteger(Number(res.headers.get("switchyard-index-age-ms")))).toBe(true);
        }),
        { seed: FUZZ_SEED, numRuns: fuzzRuns(LIST_RUNS), endOnFailure: true },
      );
      expect(report("GET /jobs")).toBe(fuzzRuns(LIST_RUNS));
    },
    fuzzTimeoutMs(LIST_RUNS),
  );

  test(
    `POST /jobs/{job_id}/cancel bodies (${fuzzRuns(CANCEL_RUNS)} runs): 404, 413, 400, 409 as the model says`,
    async () => {
      const arbitrary = fc.record({
        client,
        target: fc.constantFrom("own", "other", "unknown", "garbage"),
        unknownId: anyJobId,
        garbageId: fc.constantFrom("job_short", "x", "%E2%80%AE", "job_..%2F..%2Fx", "JOB_"),
        pick: fc.nat(2),
        body: fc.oneof(
          fc.constantFrom("", "{}", " {}\n", "\uFEFF{}", "{ }", "[]", "null", '{"a":1}', "{}{}"),
          fc.string({ unit: "grapheme", maxLength: 40 }),
          fc.string({ unit: "binary", maxLength: 40 }),
          fc.uint8Array({ maxLength: 40 }),
          fc.constantFrom(MAX_BODY, MAX_BODY + 1, 100_000).map((n) => " ".repeat(n)),
        ),
        chunked: fc.boolean(),
        contentType: fc.option(fc.constantFrom("application/json", "text/plain", "x/y")),
      });
      await fc.assert(
        fc.asyncProperty(arbitrary, async (r) => {
          const other: ClientId = r.client === "acme" ? "globex" : "acme";
          const id = {
            own: jobsOf[r.client][r.pick],
            other: jobsOf[other][r.pick],
            unknown: r.unknownId,
            garbage: r.garbageId,
          }[r.target] as string;
          const bytes = typeof r.body === "string" ? new TextEncoder().encode(r.body) : r.body;
          const text = new TextDecoder().decode(bytes).trim();
          const expected = !JOB_ID_PATTERN.test(decodeURIComponent(id))
            ? 404
            : bytes.byteLength > MAX_BODY
              ? 413
              : text !== "" && text !== "{}"
                ? 400
                : r.target === "own"
                  ? 409
                  : 404;
          const headers: Record<string, string> = { authorization: `Bearer ${CLIENTS[r.client]}` };
          if (r.contentType !== null) headers["content-type"] = r.contentType;
          const res = await fetch(`${hub.baseUrl}/jobs/${id}/cancel`, {
            method: "POST",
            headers,
            body: r.chunked ? new Blob([bytes]).stream() : bytes,
            signal: AbortSignal.timeout(5_000),
          });
          const problem = (await res.json()) as { status: number; code: string };
          expect({ id, status: res.status }).toEqual({ id, status: expected });
          expect(res.headers.get("content-type")).toBe("application/problem+json");
          expect(problem.status).toBe(expected);
          count(`${expected} ${problem.code}${r.chunked ? " (chunked)" : ""}`);
        }),
        { seed: FUZZ_SEED, numRuns: fuzzRuns(CANCEL_RUNS), endOnFailure: true },
      );
      expect(report("POST /jobs/{job_id}/cancel")).toBe(fuzzRuns(CANCEL_RUNS));
      // No cancel took: every job is still done.
      const res = await fetch(`${hub.baseUrl}/jobs/${jobsOf.acme[0]}`, {
        headers: { authorization: `Bearer ${CLIENTS.acme}` },
      });
      expect(((await res.json()) as { status: string }).status).toBe("done");
    },
    fuzzTimeoutMs(CANCEL_RUNS),
  );

  test("nothing logged an error", () => {
    expect(hub.logs()).not.toContain('"level":50');
  });
});
