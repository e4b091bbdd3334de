import { Database } from "bun:sqlite";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { JobView } from "../domain/index.ts";
import { jobViewCodec } from "../jobs/index.ts";
import {
  CLIENTS_SQL,
  COUNT_UPSERT_TAIL,
  claimSql,
  countSql,
  countsSql,
  FENCE_EVERY_WRITER_SQL,
  highestSeq,
  KEY_WITHOUT_CREATION,
  POSITION_SQL,
  pageSql,
  partitionRow,
  perMinuteSql,
  positionOfRows,
  positionUpsert,
  REKEY,
  ROW_COLUMNS,
  rowValues,
  SCAN_SQL,
  type ScannedRow,
  TABLES,
  UPSERT_TAIL,
  WRITTEN_SEQ_BACKFILL,
} from "./sql.ts";
import {
  IndexFencedError,
  type IndexStore,
  indexKey,
  type Page,
  type StoredPosition,
} from "./types.ts";

type Value = string | number | bigint | boolean | null;

const decodeViews = (rows: { view: string }[]): JobView[] =>
  rows.map((r) => jobViewCodec.fromText(r.view));

/**
 * The index in SQLite (bun:sqlite), the embedded default: one file under the data directory, in
 * WAL mode so the ingress can read while the indexer (in the projector process) writes, also from
 * another process on the same host. Several hosts need PostgreSQL (postgres.ts).
 */
export function openSqliteIndex(path: string): IndexStore {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path, { create: true, strict: false });
  db.exec("PRAGMA journal_mode = WAL");
  // WAL with NORMAL sync: a crash of the machine can lose the last transactions, never corrupt;
  // the index is rebuilt from the stream anyway, and it re-reads from its stored position.
  db.exec("PRAGMA synchronous = NORMAL");
  db.exec("PRAGMA busy_timeout = 5000");
  // The page cache stays near SQLite's default (2 MiB): new rows land at one end of each b-tree,
  // and the other pages an insert touches come back from the OS page cache at little cost. With
  // 1,000,000 rows indexed, a 16 MiB cache cost the same CPU per written row as 2 MiB (31.5 and
  // 30.7 µs, bench/index-write.ts, 2026-11-25), and 22–27 MB more of the projector's RSS peak
  // in the e2e bench (the cache, and the allocator's pages around it). A 64 MiB cache with a
  // 256 MiB map had made 52 MB of a 246 MB peak.
  db.exec("PRAGMA cache_size = -2048");
  db.exec("PRAGMA temp_store = MEMORY");
  // A checkpoint every 10,000 pages (40 MB of WAL) instead of 1,000: each one copies the pages
  // back and syncs the file, and most pages a round dirties (the random ends of the primary key)
  // are dirtied again by the next rounds. 37 against 60 µs of CPU per row, with the job-id index
  // gone (bench/index-write.ts).
  db.exec("PRAGMA wal_autocheckpoint = 10000");
  const all = (sql: string, params: unknown[]) => db.query(sql).all(...(params as Value[]));
  const upsert = () =>
    db.query(`INSERT INTO sy_jobs (${ROW_COLUMNS}) VALUES (${"?, ".repeat(11)}?) ${UPSERT_TAIL}`);
  const countUpsert = () =>
    db.query(
      `INSERT INTO sy_job_counts (kind, minute, client_id, route, status, n) VALUES (?, ?, ?, ?, ?, ?) ${COUNT_UPSERT_TAIL}`,
    );
  const setPosition = () => db.query(positionUpsert("sqlite"));

  return {
    backend: "sqlite",
    async migrate() {
      for (const statement of TABLES) db.exec(statement);
      const table = db
        .query("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'sy_jobs'")
        .get() as { sql: string } | null;
      if (table?.sql.includes(KEY_WITHOUT_CREATION)) {
        db.transaction(() => {
          for (const statement of [...REKEY, ...TABLES]) db.exec(statement);
        })();
      }
      const columns = db.query("PRAGMA table_info(sy_index_meta)").all() as { name: string }[];
      if (!columns.some((c) => c.name === "written_seq")) {
        db.exec("ALTER TABLE sy_index_meta ADD COLUMN written_seq BIGINT");
      }
      db.exec(WRITTEN_SEQ_BACKFILL);
    },
    async load(keys) {
      const out = new Map<string, JobView>();
      const get = db.query(
        "SELECT view FROM sy_jobs WHERE client_id = ? AND created_ms = ? AND job_id = ?",
      );
      for (const { clientId, createdMs, jobId } of keys) {
        const row = get.get(clientId, createdMs, jobId) as { view: string } | null;
        if (row) out.set(indexKey(clientId, jobId), jobViewCodec.fromText(row.view));
      }
      return out;
    },
    async claim(partition) {
      const row = db.query(claimSql("sqlite")).get(partitionRow(partition)) as { epoch: number };
      return Number(row.epoch);
    },
    async apply(write) {
      const rows = upsert();
      const counts = countUpsert();
      const position = setPosition();
      const owner = db.query("SELECT epoch FROM sy_index_owner WHERE id = ?");
      const id = partitionRow(write.partition);
      db.transaction(() => {
        const current = Number((owner.get(id) as { epoch: number } | null)?.epoch ?? 0);
        if (current !== write.owner) throw new IndexFencedError(write.owner, current);
        for (const row of write.rows) rows.run(...(rowValues(row.view, row.tenant) as Value[]));
        for (const c of write.counts) {
          counts.run(c.kind, c.minute, c.clientId, c.route, c.status, c.delta);
        }
        const p = write.position;
        position.run(p.appliedSeq, p.pending, p.updatedMs, p.stream, highestSeq(write.rows), id);
      })();
    },
    async position(partition): Promise<StoredPosition> {
      return positionOfRows(db.query(POSITION_SQL).all() as Record<string, unknown>[], partition);
    },
    async heartbeat(beats, nowMs) {
      const beat = db.query("UPDATE sy_index_meta SET pending = ?, updated_ms = ? WHERE id = ?");
      const owner = db.query("SELECT epoch FROM sy_index_owner WHERE id = ?");
      const refused: number[] = [];
      db.transaction(() => {
        for (const b of beats) {
          const id = partitionRow(b.partition);
          const current = Number((owner.get(id) as { epoch: number } | null)?.epoch ?? 0);
          if (current === b.owner) beat.run(b.pending, nowMs, id);
          else refused.push(b.partition);
        }
      })();
      return refused;
    },
    async page(query): Promise<Page> {
      const { sql, params } = pageSql("sqlite", query);
      const views = decodeViews(all(sql, params) as { view: string }[]);
      return pageOf(views, query.limit);
    },
    async count(filter, cap) {
      const { sql, params } = countSql("sqlite", filter, cap);
      return Number((all(sql, params)[0] as { n: number }).n);
    },
    async counts(query) {
      const { sql, params } = countsSql("sqlite", query);
      return (all(sql, params) as { route: string; status: string; n: number }[]).map((r) => ({
        route: r.route,
        status: r.status,
        count: Number(r.n),
      }));
    },
    async clients() {
      return (db.query(CLIENTS_SQL).all() as { client_id: string }[]).map((r) => r.client_id);
    },
    async perMinute(query) {
      const { sql, params } = perMinuteSql("sqlite", query);
      const rows = all(sql, params) as { minute: number; n: number }[];
      return new Map(rows.map((r) => [Number(r.minute), Number(r.n)]));
    },
    async *scan(batch) {
      let after: readonly Value[] = ["", -1, ""];
      const next = db.query(SCAN_SQL.sqlite);
      for (;;) {
        const rows = next.all(...after, batch) as ScannedRow[];
        for (const row of rows) yield jobViewCodec.fromText(row.view);
        const last = rows[rows.length - 1];
        if (last === undefined || rows.length < batch) return;
        after = [last.client_id, last.created_ms, last.job_id];
      }
    },
    async prune(beforeMs) {
      const removed = db.query("DELETE FROM sy_jobs WHERE created_ms < ?").run(beforeMs);
      db.query("DELETE FROM sy_job_counts WHERE minute < ?").run(Math.floor(beforeMs / 60_000));
      return removed.changes;
    },
    async optimize() {
      // A first ANALYZE gives the planner its statistics; later, optimize re-analyzes only what
      // changed enough (bounded by analysis_limit, so it stays cheap on a large index).
      const analyzed = db.query("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").get();
      if (analyzed === null) db.exec("ANALYZE");
      db.exec("PRAGMA analysis_limit = 1000");
      db.exec("PRAGMA optimize");
    },
    async reset() {
      db.transaction(() => {
        db.exec(FENCE_EVERY_WRITER_SQL);
        db.exec("DELETE FROM sy_jobs");
        db.exec("DELETE FROM sy_job_counts");
        db.exec("DELETE FROM sy_index_meta");
      })();
    },
    async close() {
      db.close();
    },
  };
}

/** Cuts the extra row of a page query off and says where the next page starts. */
export function pageOf(views: JobView[], limit: number): Page {
  if (views.length <= limit) return { views, next: null };
  const page = views.slice(0, limit);
  const last = page[page.length - 1] as JobView;
  return { views: page, next: { createdMs: Date.parse(last.created_at), jobId: last.job_id } };
}
