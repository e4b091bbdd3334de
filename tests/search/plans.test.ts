/**
 * How SQLite answers the index's lookups (the planner's choice, checked with EXPLAIN QUERY PLAN
 * on a migrated index). A job id alone has no index of its own (each one cost the indexer a
 * random-page insert per job): the operator API's lookup lists the clients and uses the key.
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteIndex } from "../../shared/search/index.ts";
import { pageSql } from "../../shared/search/sql.ts";

const dir = mkdtempSync(join(tmpdir(), "switchyard-plans-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const indexes = (db: Database) =>
  (db.query("SELECT name FROM sqlite_master WHERE type = 'index'").all() as { name: string }[]).map(
    (r) => r.name,
  );

describe("the index's query plans on SQLite", () => {
  test("an index migrated from one with the job-id index loses it; the others stay", async () => {
    const path = join(dir, "old.db");
    const first = openSqliteIndex(path);
    await first.migrate();
    await first.close();
    const old = new Database(path);
    old.exec("CREATE INDEX sy_jobs_job ON sy_jobs (job_id)"); // what earlier versions created
    old.close();
    const store = openSqliteIndex(path);
    await store.migrate();
    await store.close();
    const db = new Database(path);
    expect(indexes(db)).not.toContain("sy_jobs_job");
    expect(indexes(db)).toContain("sqlite_autoindex_sy_jobs_1");
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

  test("a job id with the clients listed is a primary-key search, not a scan", async () => {
    const path = join(dir, "plan.db");
    const store = openSqliteIndex(path);
    await store.migrate();
    await store.optimize();
    await store.close();
    const { sql, params } = pageSql("sqlite", {
      filter: { clientIds: ["acme", "globex"], jobIds: ["job_AAAAAAAAAAAAAAAAAAAAAA"] },
      limit: 1,
    });
    const db = new Database(path);
    const plan = db.query(`EXPLAIN QUERY PLAN ${sql}`).all(...(params as string[])) as {
      detail: string;
    }[];
    db.close();
    const details = plan.map((p) => p.detail);
    expect(
      details.some((d) =>
        /SEARCH sy_jobs USING INDEX sqlite_autoindex_sy_jobs_1 \(client_id=\? AND job_id=\?\)/.test(
          d,
        ),
      ),
    ).toBe(true);
    expect(details.some((d) => d.startsWith("SCAN sy_jobs"))).toBe(false);
  });
});
