/**
 * GET /jobs on a hub whose search index is in PostgreSQL: the list works, and when PostgreSQL goes
 * away the list answers 503 problem+json with Retry-After (not 500), while GET /jobs/{id} (served
 * from the job view in KV) and POST /run keep working. Real PostgreSQL on 127.0.0.1:5432.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { createTestDatabase, type TestDatabase } from "../helpers/postgres.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = "acme-token-0123456789abcdef";

let db: TestDatabase;
let hub: TestHub;

beforeAll(async () => {
  db = await createTestDatabase("sy_unavail");
  hub = await startHub({
    yaml: `
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
index: { backend: postgres, postgres_url: "${db.url}", linger: 20ms }
`,
  });
});
afterAll(async () => {
  // The indexer tries to write what it holds for about 6 s at stop (its backoff up to 5 s)
  // before it gives up: nothing is lost either way, its events stay unacknowledged.
  await hub?.stop();
  await db?.drop();
}, 60_000);

test("the list is served from PostgreSQL, and answers 503 with Retry-After while it is gone", async () => {
  const res = await hub.run({ request_id: "pg-1", route: "demo.echo", input: "x" }, ACME);
  expect(res.status).toBe(202);
  const { job_id } = (await res.json()) as { job_id: string };
  await waitFor("the job in the PostgreSQL index", async () => {
    const list = await hub.request("/jobs", { token: ACME });
    const body = (await list.json()) as { jobs: { job_id: string; status: string }[] };
    return body.jobs.some((j) => j.job_id === job_id && j.status === "done");
  });

  await db.drop();

  const down = await hub.request("/jobs", { token: ACME });
  expect(down.status).toBe(503);
  expect(down.headers.get("content-type")).toContain("application/problem+json");
  expect(down.headers.get("retry-after")).toBe("5");
  const problem = (await down.json()) as { code: string; detail: string };
  expect(problem.code).toBe("unavailable");
  expect(problem.detail).toContain("search index (postgres)");

  // What does not need the index keeps working: the job view and new runs.
  const one = await hub.request(`/jobs/${job_id}`, { token: ACME });
  expect(one.status).toBe(200);
  const again = await hub.run({ request_id: "pg-2", route: "demo.echo", input: "y" }, ACME);
  expect(again.status).toBe(202);
});

test("a hub stops without an error: the index closes after the indexer and the APIs", async () => {
  // The index used to close first: the indexer then spent its stop retrying writes into a closed
  // database ("Cannot use a closed database", logged at error for seconds).
  const sqliteHub = await startHub({});
  const res = await sqliteHub.run({ request_id: "stop-1", route: "demo.echo", input: "x" }, ACME);
  expect(res.status).toBe(202);
  await sqliteHub.stop();
  const errors = sqliteHub
    .logs()
    .split("\n")
    .filter((line) => line.includes('"level":50'));
  expect(errors).toEqual([]);
});
