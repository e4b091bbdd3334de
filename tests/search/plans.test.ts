/**
 * How SQLite answers the index's lookups (the planner's choice, checked with EXPLAIN QUERY PLAN
 * on a migrated index). Neither a job id nor a request_id has an index of its own (each one cost
 * the indexer a random-page insert per job): the operator API's lookups list the clients and use
 * the key (a request_id through the job id it names in each client, request-lookup.ts).
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JobFilter } from "../../shared/search/index.ts";
import { openSqliteIndex } from "../../shared/search/index.ts";
import { CLIENTS_SQL, pageSql } from "../../shared/search/sql.ts";

const dir = mkdtempSync(join(tmpdir(), "switchyard-plans-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const indexes = (db: Database) =>
  (db.query("SELECT name FROM sqlite_master WHERE type = 'index'").all() as { name: string }[]).map(
    (r) => r.name,
  );

describe("the index's query plans on SQLite", () => {
  test("an index migrated from one with the job-id and request-id indexes loses them; the others stay", async () => {
    const path = join(dir, "old.db");
    const first = openSqliteIndex(path);
    await first.migrate();
    await first.close();
    const old = new Database(path);
    // What earlier versions created.
    old.exec("CREATE INDEX sy_jobs_job ON sy_jobs (job_id)");
    old.exec("CREATE INDEX sy_jobs_request ON sy_jobs (request_id)");
    old.close();
    const store = openSqliteIndex(path);
    await store.migrate();
    await store.close();
    const db = new Database(path);
    expect(indexes(db)).not.toContain("sy_jobs_job");
    expect(indexes(db)).not.toContain("sy_jobs_request");
    expect(indexes(db)).toContain("sqlite_autoindex_sy_jobs_1");
    expect(indexes(db)).toContain("sy_jobs_client_status");
    db.close();
  });

  test("an index from before written_seq gets it from its rows when migrated", async () => {
    const path = join(dir, "before-written-seq.db");
    const store = openSqliteIndex(path);
    await store.migrate();
    const owner = await store.claim();
    const at = "2026-03-01T00:00:00.000Z";
    const row = (seq: number) => ({
      view: {
        job_id: `job_${String(seq).padStart(22, "0")}`,
        client_id: "acme",
        request_id: `r${seq}`,
        route: "demo.echo",
        status: "done" as const,
        created_at: at,
        updated_at: at,
        fingerprint: "0".repeat(64),
        seq,
      },
      tenant: undefined,
    });
    const position = { appliedSeq: 3, pending: 0, updatedMs: 1, stream: "s" };
    await store.apply({ owner, rows: [row(3), row(41), row(7)], counts: [], position });
    await store.close();
    // What an index written by an earlier version looks like: the column, never set.
    const old = new Database(path);
    old.exec("ALTER TABLE sy_index_meta DROP COLUMN written_seq");
    old.close();
    const migrated = openSqliteIndex(path);
    await migrated.migrate();
    expect(await migrated.position()).toMatchObject({ appliedSeq: 3, writtenSeq: 41 });
    await migrated.close();
  });

  /** The planner's steps for a statement on a fresh, analyzed index of its own. */
  const planOfSql = async (name: string, sql: string, params: readonly unknown[] = []) => {
    const path = join(dir, name);
    const store = openSqliteIndex(path);
    await store.migrate();
    await store.optimize();
    await store.close();
    const db = new Database(path);
    const plan = db.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as string[])) as {
      detail: string;
    }[];
    db.close();
    return plan.map((p) => p.detail);
  };
  const planOf = (name: string, filter: JobFilter) => {
    const { sql, params } = pageSql("sqlite", { filter, limit: 50 });
    return planOfSql(name, sql, params);
  };

  const KEY_SEARCH =
    /SEARCH sy_jobs USING INDEX sqlite_autoindex_sy_jobs_1 \(client_id=\? AND created_ms=\? AND job_id=\?\)/;
  const job = {
    clientId: "acme",
    createdMs: 1_795_000_000_000,
    jobId: "job_AAAAAAAAAAAAAAAAAAAAAA",
  };

  test("a job by its key is a key search, not a scan", async () => {
    const details = await planOf("plan.db", { jobs: [job] });
    expect(details.some((d) => KEY_SEARCH.test(d))).toBe(true);
    expect(details.some((d) => d.startsWith("SCAN sy_jobs"))).toBe(false);
  });

  test("a client's newest jobs walk the key in order: no sort, no scan", async () => {
    const details = await planOf("client-plan.db", { clientIds: ["acme"] });
    expect(details).toEqual([
      "SEARCH sy_jobs USING INDEX sqlite_autoindex_sy_jobs_1 (client_id=?)",
    ]);
  });

  test("the clients with indexed jobs: a search of the key per client, no scan", async () => {
    const details = await planOfSql("clients-plan.db", CLIENTS_SQL);
    expect(details.filter((d) => d.includes("sy_jobs")).length).toBeGreaterThan(0);
    for (const d of details.filter((d) => d.includes("sy_jobs"))) {
      expect(d).toMatch(/^SEARCH sy_jobs USING COVERING INDEX sqlite_autoindex_sy_jobs_1/);
    }
  });

  test("a request_id, with other filters, is a key search per job", async () => {
    // The filter withRequestIdLookup gives each client's query.
    const details = await planOf("request-plan.db", {
      clientIds: ["acme"],
      jobs: [job],
      requestId: "order-1234",
      statuses: ["done"],
      routes: ["billing.refund"],
    });
    expect(details.some((d) => KEY_SEARCH.test(d))).toBe(true);
  });
});
