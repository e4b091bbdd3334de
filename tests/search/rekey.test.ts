/**
 * An index keyed the earlier way, (client_id, job_id), is emptied and keyed anew by migrate, on
 * both engines: its key cannot change in place, and the stream rebuilds it. Every writer of the
 * old index is fenced (it would write rows the new key does not know).
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import {
  IndexFencedError,
  type IndexStore,
  openPostgresIndex,
  openSqliteIndex,
} from "../../shared/search/index.ts";
import { doneJobView } from "../helpers/index-engines.ts";
import { createTestDatabase } from "../helpers/postgres.ts";

/** sy_jobs as indexes made before the creation time joined the key had it. */
const OLD_JOBS_TABLE = `CREATE TABLE sy_jobs (
  client_id TEXT NOT NULL, job_id TEXT NOT NULL, request_id TEXT NOT NULL, route TEXT NOT NULL,
  status TEXT NOT NULL, created_ms BIGINT NOT NULL, updated_ms BIGINT NOT NULL, error_code TEXT,
  tenant TEXT, callback_status TEXT, seq BIGINT NOT NULL, view TEXT NOT NULL,
  PRIMARY KEY (client_id, job_id)
)`;

const at = "2026-03-01T00:00:00.000Z";
const view = doneJobView;

interface Engine {
  readonly store: IndexStore;
  /** Runs statements on the engine directly, outside the store. */
  exec(statements: readonly string[]): Promise<void>;
  /** The definition of sy_jobs' key as the engine shows it. */
  key(): Promise<string>;
  cleanup(): Promise<void>;
}

const dir = mkdtempSync(join(tmpdir(), "sy-rekey-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ENGINES: readonly (readonly [string, () => Promise<Engine>])[] = [
  [
    "sqlite",
    async () => {
      const path = join(dir, "index.sqlite");
      const store = openSqliteIndex(path);
      const raw = new Database(path);
      return {
        store,
        exec: async (statements) => {
          for (const s of statements) raw.exec(s);
        },
        key: async () =>
          (
            raw.query("SELECT sql FROM sqlite_master WHERE name = 'sy_jobs'").get() as {
              sql: string;
            }
          ).sql,
        cleanup: async () => {
          raw.close();
          await store.close();
        },
      };
    },
  ],
  [
    "postgres",
    async () => {
      const db = await createTestDatabase("sy_rekey");
      const store = openPostgresIndex(db.url);
      const raw = new SQL(db.url, { max: 1 });
      return {
        store,
        exec: async (statements) => {
          for (const s of statements) await raw.unsafe(s);
        },
        key: async () => {
          const [row] = (await raw.unsafe(
            "SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'sy_jobs'::regclass AND contype = 'p'",
          )) as { def: string }[];
          return row?.def ?? "";
        },
        cleanup: async () => {
          await raw.close();
          await store.close();
          await db.drop();
        },
      };
    },
  ],
];

for (const [name, open] of ENGINES) {
  describe(`an index keyed without the creation time, on ${name}`, () => {
    test("migrate empties it, keys it anew and fences its writers; the stream fills it again", async () => {
      const engine = await open();
      try {
        const { store } = engine;
        await store.migrate();
        const oldOwner = await store.claim();
        const position = { appliedSeq: 9, pending: 0, updatedMs: 1, stream: "s" };
        const created = {
          kind: "created" as const,
          minute: 1,
          clientId: "acme",
          route: "demo.echo",
          status: "done",
          delta: 1,
        };
        await store.apply({
          owner: oldOwner,
          rows: [{ view: view(9), tenant: undefined }],
          counts: [created],
          position,
        });
        // What an index written by an earlier version looks like: the same, keyed by the job.
        await engine.exec([
          "DROP TABLE sy_jobs",
          OLD_JOBS_TABLE,
          `INSERT INTO sy_jobs (client_id, job_id, request_id, route, status, created_ms, updated_ms, seq, view) VALUES ('acme', '${view(9).job_id}', 'r9', 'demo.echo', 'done', 1, 1, 9, '${JSON.stringify(view(9))}')`,
        ]);
        expect(await engine.key()).toContain("PRIMARY KEY (client_id, job_id)");

        await store.migrate();
        expect(await engine.key()).toContain("PRIMARY KEY (client_id, created_ms, job_id)");
        expect(await store.count({}, 10)).toBe(0);
        expect(await store.clients()).toEqual([]);
        expect(await store.position()).toMatchObject({ appliedSeq: 0, writtenSeq: 0 });
        // The old writer is refused; a new claim writes, and migrating again keeps its rows.
        await expect(
          store.apply({ owner: oldOwner, rows: [], counts: [], position }),
        ).rejects.toBeInstanceOf(IndexFencedError);
        const owner = await store.claim();
        await store.apply({
          owner,
          rows: [{ view: view(9), tenant: undefined }],
          counts: [created],
          position,
        });
        await store.migrate();
        expect(await store.count({}, 10)).toBe(1);
        const key = { clientId: "acme", createdMs: Date.parse(at), jobId: view(9).job_id };
        expect((await store.load([key])).get(`acme.${view(9).job_id}`)?.seq).toBe(9);
      } finally {
        await engine.cleanup();
      }
    });
  });
}
