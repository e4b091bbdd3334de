import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JobView } from "../../shared/domain/index.ts";
import { type IndexStore, openPostgresIndex, openSqliteIndex } from "../../shared/search/index.ts";
import { createTestDatabase } from "./postgres.ts";

export interface OpenedIndex {
  readonly store: IndexStore;
  cleanup(): Promise<void>;
}

/**
 * The search index's two engines, for suites that must pass on both: SQLite in a temporary file,
 * and PostgreSQL in a database of its own on the machine's server (dropped afterwards).
 */
export const INDEX_ENGINES: readonly (readonly [string, () => Promise<OpenedIndex>])[] = [
  [
    "sqlite",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "sy-index-"));
      const store = openSqliteIndex(join(dir, "index.sqlite"));
      return {
        store,
        cleanup: async () => {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  ],
  [
    "postgres",
    async () => {
      const db = await createTestDatabase("sy_index");
      const store = openPostgresIndex(db.url);
      return {
        store,
        cleanup: async () => {
          await store.close();
          await db.drop();
        },
      };
    },
  ],
];

/** Job n of client acme, done, created 2026-03-01 00:00 UTC, at stream sequence n. */
export const doneJobView = (n: number): JobView => ({
  job_id: `job_${String(n).padStart(22, "0")}`,
  client_id: "acme",
  request_id: `r${n}`,
  route: "demo.echo",
  status: "done",
  created_at: "2026-03-01T00:00:00.000Z",
  updated_at: "2026-03-01T00:00:00.000Z",
  fingerprint: "0".repeat(64),
  seq: n,
});
