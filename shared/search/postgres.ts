import { SQL } from "bun";
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
  Params,
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
  TABLES,
  UPSERT_TAIL,
  WRITTEN_SEQ_BACKFILL,
} from "./sql.ts";
import { pageOf } from "./sqlite.ts";
import type { CountDelta, IndexStore, IndexWrite, StoredPosition } from "./types.ts";
import { IndexFencedError, indexKey } from "./types.ts";

/** Rows per INSERT statement: 12 parameters each, well below PostgreSQL's 65,535. */
const ROWS_PER_STATEMENT = 500;

type Tx = { unsafe(sql: string, params?: unknown[]): Promise<unknown[]> };

/** One order of the count rows' key: every writer locks them in this order. */
function compareCountKeys(a: CountDelta, b: CountDelta): number {
  const left = [a.kind, a.clientId, a.route, a.status];
  const right = [b.kind, b.clientId, b.route, b.status];
  if (a.minute !== b.minute) return a.minute - b.minute;
  for (let i = 0; i < left.length; i++) {
    const l = left[i] as string;
    const r = right[i] as string;
    if (l !== r) return l < r ? -1 : 1;
  }
  return 0;
}

async function writeRows(tx: Tx, write: IndexWrite): Promise<void> {
  // Row-locks the owner record: a concurrent claim waits for this transaction, and a write of an
  // older epoch is refused.
  const id = partitionRow(write.partition);
  const [owner] = (await tx.unsafe("SELECT epoch FROM sy_index_owner WHERE id = $1 FOR UPDATE", [
    id,
  ])) as {
    epoch: unknown;
  }[];
  const current = Number(owner?.epoch ?? 0);
  if (current !== write.owner) throw new IndexFencedError(write.owner, current);
  for (let i = 0; i < write.rows.length; i += ROWS_PER_STATEMENT) {
    const params = new Params("postgres");
    const tuples = write.rows
      .slice(i, i + ROWS_PER_STATEMENT)
      .map((row) => `(${params.list(rowValues(row.view, row.tenant))})`);
    await tx.unsafe(
      `INSERT INTO sy_jobs (${ROW_COLUMNS}) VALUES ${tuples.join(", ")} ${UPSERT_TAIL}`,
      params.values,
    );
  }
  // One statement may not touch a row twice: the deltas arrive summed per key (indexer). The
  // partitions' indexers share the count rows (same client, route and minute): each takes their
  // row locks in one order, or two transactions locking them crosswise deadlock.
  const counts = [...write.counts].sort(compareCountKeys);
  for (let i = 0; i < counts.length; i += ROWS_PER_STATEMENT) {
    const params = new Params("postgres");
    const tuples = counts
      .slice(i, i + ROWS_PER_STATEMENT)
      .map((c) => `(${params.list([c.kind, c.minute, c.clientId, c.route, c.status, c.delta])})`);
    await tx.unsafe(
      `INSERT INTO sy_job_counts (kind, minute, client_id, route, status, n) VALUES ${tuples.join(", ")} ${COUNT_UPSERT_TAIL}`,
      params.values,
    );
  }
  const p = write.position;
  await tx.unsafe(positionUpsert("postgres"), [
    p.appliedSeq,
    p.pending,
    p.updatedMs,
    p.stream,
    highestSeq(write.rows),
    id,
  ]);
}

/**
 * The index in PostgreSQL (Bun's built-in client), for deployments with several hub replicas:
 * the indexer (in the projector service) writes, every ingress replica reads. Same tables and
 * queries as SQLite (sql.ts); both pass tests/search/store.test.ts.
 */
export function openPostgresIndex(
  url: string,
  options: { readonly max?: number } = {},
): IndexStore {
  const sql = new SQL(url, { max: options.max ?? 8, idleTimeout: 30 });
  const rows = (text: string, params: unknown[]) =>
    sql.unsafe(text, params) as Promise<Record<string, unknown>[]>;
  return {
    backend: "postgres",
    async migrate() {
      // One migration at a time over every replica: a transaction-scoped advisory lock.
      await sql.begin(async (tx) => {
        await tx.unsafe("SELECT pg_advisory_xact_lock(726351)");
        for (const statement of TABLES) await tx.unsafe(statement);
        const [key] = (await tx.unsafe(
          "SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = 'sy_jobs'::regclass AND contype = 'p'",
        )) as { def: string }[];
        if (key?.def.includes(KEY_WITHOUT_CREATION)) {
          for (const statement of [...REKEY, ...TABLES]) await tx.unsafe(statement);
        }
        await tx.unsafe("ALTER TABLE sy_index_meta ADD COLUMN IF NOT EXISTS written_seq BIGINT");
        await tx.unsafe(WRITTEN_SEQ_BACKFILL);
      });
    },
    async load(keys) {
      const out = new Map<string, JobView>();
      if (keys.length === 0) return out;
      const params = new Params("postgres");
      const tuples = keys.map(
        (k) => `(${params.add(k.clientId)}, ${params.add(k.createdMs)}, ${params.add(k.jobId)})`,
      );
      const found = await rows(
        `SELECT client_id, job_id, view FROM sy_jobs WHERE (client_id, created_ms, job_id) IN (${tuples.join(", ")})`,
        params.values,
      );
      for (const r of found) {
        out.set(
          indexKey(String(r.client_id), String(r.job_id)),
          jobViewCodec.fromText(String(r.view)),
        );
      }
      return out;
    },
    async claim(partition) {
      const [row] = await rows(claimSql("postgres"), [partitionRow(partition)]);
      return Number(row?.epoch);
    },
    async apply(write) {
      await sql.begin((tx) => writeRows(tx as unknown as Tx, write));
    },
    async position(partition): Promise<StoredPosition> {
      return positionOfRows(await rows(POSITION_SQL, []), partition);
    },
    async heartbeat(beats, nowMs) {
      if (beats.length === 0) return [];
      // One statement for every partition: (id, owner, pending) triples from $2 on. Only beats of
      // the current epoch move their position; the ids of those come back.
      const values = beats
        .map((_, i) => `($${3 * i + 2}::int, $${3 * i + 3}::bigint, $${3 * i + 4}::bigint)`)
        .join(", ");
      const live = await rows(
        `WITH v(id, owner, pending) AS (VALUES ${values}),
        live AS (SELECT v.id, v.pending FROM v JOIN sy_index_owner o ON o.id = v.id AND o.epoch = v.owner),
        moved AS (UPDATE sy_index_meta AS m SET pending = live.pending, updated_ms = $1 FROM live WHERE m.id = live.id)
        SELECT id FROM live`,
        [nowMs, ...beats.flatMap((b) => [partitionRow(b.partition), b.owner, b.pending])],
      );
      const current = new Set(live.map((r) => Number(r.id)));
      return beats.filter((b) => !current.has(partitionRow(b.partition))).map((b) => b.partition);
    },
    async page(query) {
      const { sql: text, params } = pageSql("postgres", query);
      const found = await rows(text, params);
      return pageOf(
        found.map((r) => jobViewCodec.fromText(String(r.view))),
        query.limit,
      );
    },
    async count(filter, cap) {
      const { sql: text, params } = countSql("postgres", filter, cap);
      return Number((await rows(text, params))[0]?.n ?? 0);
    },
    async counts(query) {
      const { sql: text, params } = countsSql("postgres", query);
      return (await rows(text, params)).map((r) => ({
        route: String(r.route),
        status: String(r.status),
        count: Number(r.n),
      }));
    },
    async clients() {
      return (await rows(CLIENTS_SQL, [])).map((r) => String(r.client_id));
    },
    async perMinute(query) {
      const { sql: text, params } = perMinuteSql("postgres", query);
      const found = await rows(text, params);
      return new Map(found.map((r) => [Number(r.minute), Number(r.n)]));
    },
    async *scan(batch) {
      let after: unknown[] = ["", -1, ""];
      for (;;) {
        const found = await rows(SCAN_SQL.postgres, [...after, batch]);
        for (const r of found) yield jobViewCodec.fromText(String(r.view));
        const last = found[found.length - 1];
        if (last === undefined || found.length < batch) return;
        after = [String(last.client_id), Number(last.created_ms), String(last.job_id)];
      }
    },
    async prune(beforeMs) {
      const removed = await sql.unsafe("DELETE FROM sy_jobs WHERE created_ms < $1", [beforeMs]);
      await rows("DELETE FROM sy_job_counts WHERE minute < $1", [Math.floor(beforeMs / 60_000)]);
      return Number((removed as unknown as { count?: number }).count ?? 0);
    },
    async optimize() {
      await sql.unsafe("ANALYZE sy_jobs, sy_job_counts");
    },
    async reset() {
      await sql.begin(async (tx) => {
        // First: it waits for a write holding its owner row, and the writes after it see the new
        // epoch and are refused.
        await tx.unsafe(FENCE_EVERY_WRITER_SQL);
        await tx.unsafe("TRUNCATE sy_jobs, sy_job_counts, sy_index_meta");
      });
    },
    async close() {
      await sql.close();
    },
  };
}
