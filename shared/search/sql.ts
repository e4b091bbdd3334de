import { parseIsoMs } from "../clock/index.ts";
import type { JobView } from "../domain/index.ts";
import { jobViewCodec } from "../jobs/index.ts";
import {
  type CountQuery,
  EMPTY_POSITION,
  type JobFilter,
  type JobKey,
  type PageQuery,
  type StoredPosition,
} from "./types.ts";

/**
 * The index's SQL, shared by both engines: the same tables, indexes and queries, with the
 * placeholder style as the only difference (`?` for SQLite, `$n` for PostgreSQL). Every value is
 * a bound parameter; only column names chosen here are ever spliced in.
 */
export type Dialect = "sqlite" | "postgres";

export const TABLES = [
  `CREATE TABLE IF NOT EXISTS sy_jobs (
    client_id TEXT NOT NULL,
    job_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    route TEXT NOT NULL,
    status TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL,
    error_code TEXT,
    tenant TEXT,
    callback_status TEXT,
    seq BIGINT NOT NULL,
    view TEXT NOT NULL,
    PRIMARY KEY (client_id, created_ms, job_id)
  )`,
  `CREATE TABLE IF NOT EXISTS sy_job_counts (
    kind TEXT NOT NULL,
    minute BIGINT NOT NULL,
    client_id TEXT NOT NULL,
    route TEXT NOT NULL,
    status TEXT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (kind, minute, client_id, route, status)
  )`,
  `CREATE TABLE IF NOT EXISTS sy_index_meta (
    id INTEGER PRIMARY KEY,
    applied_seq BIGINT NOT NULL,
    pending BIGINT NOT NULL,
    updated_ms BIGINT NOT NULL,
    stream TEXT NOT NULL,
    written_seq BIGINT
  )`,
  `CREATE TABLE IF NOT EXISTS sy_index_owner (
    id INTEGER PRIMARY KEY,
    epoch BIGINT NOT NULL
  )`,
  // Newest first within a client (the Client API list: the key) and across clients (operator
  // search). Each filter the issue names has an index led by it and ending in the page order, and
  // the client list has one per filter it takes (without them PostgreSQL walked 35,000 rows for a
  // client's rare statuses on one route: 116 ms p99 at 1,000,000 jobs). Each index costs the
  // indexer a b-tree insert per job; bench/index.ts and `npm run bench -- index` measure both.
  "CREATE INDEX IF NOT EXISTS sy_jobs_client_status ON sy_jobs (client_id, status, created_ms, job_id)",
  "CREATE INDEX IF NOT EXISTS sy_jobs_client_route ON sy_jobs (client_id, route, created_ms, job_id)",
  "CREATE INDEX IF NOT EXISTS sy_jobs_created ON sy_jobs (created_ms, job_id)",
  "CREATE INDEX IF NOT EXISTS sy_jobs_status ON sy_jobs (status, created_ms, job_id)",
  "CREATE INDEX IF NOT EXISTS sy_jobs_route ON sy_jobs (route, created_ms, job_id)",
  "CREATE INDEX IF NOT EXISTS sy_jobs_error ON sy_jobs (error_code, created_ms, job_id) WHERE error_code IS NOT NULL",
  "CREATE INDEX IF NOT EXISTS sy_jobs_tenant ON sy_jobs (tenant, created_ms, job_id) WHERE tenant IS NOT NULL",
  "CREATE INDEX IF NOT EXISTS sy_jobs_callback_failed ON sy_jobs (created_ms, job_id) WHERE callback_status = 'failed'",
  // No b-tree is led by a job id or a request_id: job ids are keyed hashes, and callers'
  // request_ids are often random (UUIDs), so each would take its insert at a random page. The
  // key has the creation time after the client for the same reason (KEY_WITHOUT_CREATION).
  // A job is found by (client, creation time, job id); its creation time is its run.requested's
  // (request-lookup.ts, services/indexer index-model.ts).
  "DROP INDEX IF EXISTS sy_jobs_job",
  "DROP INDEX IF EXISTS sy_jobs_request",
  "DROP INDEX IF EXISTS sy_jobs_client_created",
] as const;

/**
 * The key of an index made before the creation time joined it: random pages for every new job's
 * key entry, 8.5 of SQLite's 19 µs of CPU per row (bench/index-write.ts, 2026-11-27). Such an
 * index is emptied and rebuilt from the stream (REKEY), since its key cannot change in place.
 */
export const KEY_WITHOUT_CREATION = "PRIMARY KEY (client_id, job_id)";

/**
 * Empties an index keyed without the creation time and fences every writer (its position goes,
 * so the indexer folds the stream from the start); the tables are then made anew.
 */
export const REKEY = [
  "DROP TABLE sy_jobs",
  "DELETE FROM sy_job_counts",
  "DELETE FROM sy_index_meta",
  "UPDATE sy_index_owner SET epoch = epoch + 1",
] as const;

/**
 * An index made before `written_seq` gets it from its rows, once (a scan of sy_jobs). The column
 * is added by each engine's migrate (SQLite has no ADD COLUMN IF NOT EXISTS).
 */
export const WRITTEN_SEQ_BACKFILL =
  "UPDATE sy_index_meta SET written_seq = (SELECT COALESCE(MAX(seq), 0) FROM sy_jobs) WHERE written_seq IS NULL";

/** The highest row sequence of a write (0 without rows). */
export const highestSeq = (rows: readonly { readonly view: JobView }[]): number =>
  rows.reduce((max, row) => Math.max(max, row.view.seq), 0);

/**
 * The row of partition p in sy_index_meta and sy_index_owner: its id is p + 1, so the one row of
 * an index made before partitions (id 1) is partition 0's, and the tables need no migration.
 */
export const partitionRow = (partition = 0): number => partition + 1;

/** The position's upsert; `greatest` is the engine's two-argument maximum. */
export const positionUpsert = (dialect: Dialect): string => {
  // Numbered, so the partition's row id (bound last) can come first in the statement.
  const [a, b, c, d, e, id] = [1, 2, 3, 4, 5, 6].map((n) =>
    dialect === "sqlite" ? `?${n}` : `$${n}`,
  );
  const greatest = dialect === "sqlite" ? "MAX" : "GREATEST";
  return `INSERT INTO sy_index_meta (id, applied_seq, pending, updated_ms, stream, written_seq) VALUES (${id}, ${a}, ${b}, ${c}, ${d}, ${e}) ON CONFLICT (id) DO UPDATE SET applied_seq = excluded.applied_seq, pending = excluded.pending, updated_ms = excluded.updated_ms, stream = excluded.stream, written_seq = ${greatest}(COALESCE(sy_index_meta.written_seq, 0), excluded.written_seq)`;
};

/** Reads every partition's position (sy_index_meta: a row per partition), partition 0 first. */
export const POSITION_SQL =
  "SELECT id, applied_seq, pending, updated_ms, stream, written_seq FROM sy_index_meta ORDER BY id";

/** One partition's position, or the whole index's (see IndexStore.position), from its rows. */
export function positionOfRows(
  rows: readonly Record<string, unknown>[],
  partition: number | undefined,
): StoredPosition {
  if (partition !== undefined) {
    return positionOf(rows.find((r) => Number(r.id) === partitionRow(partition)));
  }
  const first = positionOf(rows.find((r) => Number(r.id) === partitionRow(0)));
  if (rows.length <= 1) return first;
  const all = rows.map((r) => positionOf(r));
  return {
    ...first,
    pending: all.reduce((sum, p) => sum + p.pending, 0),
    updatedMs: Math.min(...all.map((p) => p.updatedMs)),
  };
}

/** The stored position from its row (engines return numbers or strings for BIGINT). */
export function positionOf(row: Record<string, unknown> | null | undefined): StoredPosition {
  if (!row) return EMPTY_POSITION;
  return {
    appliedSeq: Number(row.applied_seq),
    pending: Number(row.pending),
    updatedMs: Number(row.updated_ms),
    stream: String(row.stream),
    writtenSeq: Number(row.written_seq ?? 0),
  };
}

/** Collects bound parameters and writes the engine's placeholder for each. */
export class Params {
  readonly values: unknown[] = [];
  constructor(private readonly dialect: Dialect) {}

  add(value: unknown): string {
    this.values.push(value);
    return this.dialect === "sqlite" ? "?" : `$${this.values.length}`;
  }

  list(values: readonly unknown[]): string {
    return values.map((v) => this.add(v)).join(", ");
  }
}

/** The WHERE clause (without the keyword) of a filter; "1=1" when it has none. */
export function whereOf(filter: JobFilter, params: Params): string {
  const parts: string[] = [];
  const inList = (column: string, values: readonly unknown[] | undefined) => {
    if (values === undefined || values.length === 0) return;
    parts.push(
      values.length === 1
        ? `${column} = ${params.add(values[0])}`
        : `${column} IN (${params.list(values)})`,
    );
  };
  inList("client_id", filter.clientIds);
  inList("status", filter.statuses);
  inList("route", filter.routes);
  inList("error_code", filter.errorCodes);
  inList("tenant", filter.tenants);
  if (filter.jobs !== undefined && filter.jobs.length > 0) {
    const one = (job: JobKey) =>
      `(client_id = ${params.add(job.clientId)} AND created_ms = ${params.add(job.createdMs)} AND job_id = ${params.add(job.jobId)})`;
    parts.push(`(${filter.jobs.map(one).join(" OR ")})`);
  }
  inList("callback_status", filter.callbackStatuses);
  if (filter.requestId !== undefined) parts.push(`request_id = ${params.add(filter.requestId)}`);
  if (filter.createdFromMs !== undefined) {
    parts.push(`created_ms >= ${params.add(filter.createdFromMs)}`);
  }
  if (filter.createdBeforeMs !== undefined) {
    parts.push(`created_ms < ${params.add(filter.createdBeforeMs)}`);
  }
  return parts.length === 0 ? "1=1" : parts.join(" AND ");
}

/**
 * One page, newest first: a keyset on (created_ms, job_id), so a page costs the same at any
 * depth, and rows inserted while paging never shift the rows after the cursor. One row more than
 * the limit says whether another page follows.
 */
export function pageSql(dialect: Dialect, query: PageQuery): { sql: string; params: unknown[] } {
  const params = new Params(dialect);
  let where = whereOf(query.filter, params);
  if (query.after) {
    // A row value: both engines use it as a range bound on the (…, created_ms, job_id) indexes,
    // so a deep page starts where the cursor points. (The same condition spelled with OR made
    // PostgreSQL walk every newer row: 560 ms p99 at 1,000,000 jobs.)
    const ms = params.add(query.after.createdMs);
    const id = params.add(query.after.jobId);
    where += ` AND (created_ms, job_id) < (${ms}, ${id})`;
  }
  const limit = params.add(query.limit + 1);
  return {
    sql: `SELECT view FROM sy_jobs WHERE ${where} ORDER BY created_ms DESC, job_id DESC LIMIT ${limit}`,
    params: params.values,
  };
}

export function countSql(
  dialect: Dialect,
  filter: JobFilter,
  cap: number,
): { sql: string; params: unknown[] } {
  const params = new Params(dialect);
  const where = whereOf(filter, params);
  const limit = params.add(cap + 1);
  return {
    sql: `SELECT COUNT(*) AS n FROM (SELECT 1 FROM sy_jobs WHERE ${where} LIMIT ${limit}) capped`,
    params: params.values,
  };
}

export function countsSql(dialect: Dialect, query: CountQuery): { sql: string; params: unknown[] } {
  const params = new Params(dialect);
  let where = `kind = ${params.add(query.kind)} AND minute >= ${params.add(query.fromMinute)} AND minute < ${params.add(query.toMinute)}`;
  if (query.clientIds !== undefined && query.clientIds.length > 0) {
    where += ` AND client_id IN (${params.list(query.clientIds)})`;
  }
  return {
    sql: `SELECT route, status, SUM(n) AS n FROM sy_job_counts WHERE ${where} GROUP BY route, status HAVING SUM(n) <> 0 ORDER BY route, status`,
    params: params.values,
  };
}

/** The columns of a row, in TABLES order, for an upsert. */
export function rowValues(view: JobView, tenant: string | undefined): unknown[] {
  return [
    view.client_id,
    view.job_id,
    view.request_id,
    view.route,
    view.status,
    parseIsoMs(view.created_at),
    parseIsoMs(view.updated_at),
    view.error?.code ?? null,
    tenant ?? null,
    view.callback?.status ?? null,
    view.seq,
    jobViewCodec.toText(view),
  ];
}

/**
 * The clients with indexed jobs, in order: a walk down the key's first column, one b-tree search
 * per client (both engines scan a whole index for DISTINCT on it).
 */
export const CLIENTS_SQL = `WITH RECURSIVE clients(id) AS (
    SELECT MIN(client_id) FROM sy_jobs
    UNION ALL
    SELECT (SELECT MIN(client_id) FROM sy_jobs WHERE client_id > clients.id) FROM clients WHERE clients.id IS NOT NULL
  )
  SELECT id AS client_id FROM clients WHERE id IS NOT NULL`;

/** A page of every row in key order, after a key (client, created_ms, job_id): audit verify. */
export const SCAN_SQL = {
  sqlite:
    "SELECT client_id, created_ms, job_id, view FROM sy_jobs WHERE (client_id, created_ms, job_id) > (?, ?, ?) ORDER BY client_id, created_ms, job_id LIMIT ?",
  postgres:
    "SELECT client_id, created_ms, job_id, view FROM sy_jobs WHERE (client_id, created_ms, job_id) > ($1, $2, $3) ORDER BY client_id, created_ms, job_id LIMIT $4",
} as const;

export interface ScannedRow {
  readonly client_id: string;
  readonly created_ms: number;
  readonly job_id: string;
  readonly view: string;
}

export const ROW_COLUMNS =
  "client_id, job_id, request_id, route, status, created_ms, updated_ms, error_code, tenant, callback_status, seq, view";

/** The upsert's conflict clause: a row only moves forward in the stream, and keeps its tenant. */
export const UPSERT_TAIL = `ON CONFLICT (client_id, created_ms, job_id) DO UPDATE SET
  status = excluded.status, updated_ms = excluded.updated_ms, error_code = excluded.error_code,
  tenant = COALESCE(excluded.tenant, sy_jobs.tenant), callback_status = excluded.callback_status,
  seq = excluded.seq, view = excluded.view
  WHERE sy_jobs.seq < excluded.seq`;

export const COUNT_UPSERT_TAIL =
  "ON CONFLICT (kind, minute, client_id, route, status) DO UPDATE SET n = sy_job_counts.n + excluded.n";

export function perMinuteSql(
  dialect: Dialect,
  query: CountQuery,
): { sql: string; params: unknown[] } {
  const params = new Params(dialect);
  let where = `kind = ${params.add(query.kind)} AND minute >= ${params.add(query.fromMinute)} AND minute < ${params.add(query.toMinute)}`;
  if (query.clientIds !== undefined && query.clientIds.length > 0) {
    where += ` AND client_id IN (${params.list(query.clientIds)})`;
  }
  return {
    sql: `SELECT minute, SUM(n) AS n FROM sy_job_counts WHERE ${where} GROUP BY minute`,
    params: params.values,
  };
}

/**
 * Part of every reset: a new epoch for every partition's writer, so an indexer writing now is
 * refused at its next write (it then leads again, from the emptied index).
 */
export const FENCE_EVERY_WRITER_SQL = "UPDATE sy_index_owner SET epoch = epoch + 1";

export const claimSql = (dialect: Dialect): string =>
  `INSERT INTO sy_index_owner (id, epoch) VALUES (${dialect === "sqlite" ? "?" : "$1"}, 1) ON CONFLICT (id) DO UPDATE SET epoch = sy_index_owner.epoch + 1 RETURNING epoch`;
