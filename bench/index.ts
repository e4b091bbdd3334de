/**
 * The search index with 1,000,000 jobs (issue 16, section 3): fills a fresh index (SQLite, and
 * PostgreSQL when reachable) through the indexer's own write path, then times list and search
 * queries, each filter alone and combined, first pages and deep pages, and prints one JSON line.
 * Job ids are derived as the ingress derives them (the keyed hash of client and request_id), and
 * the request_id case goes through the operator API's lookup (withRequestIdLookup): a job id per
 * client, its creation time from the jobs written here (the hub reads it from the stream, one
 * read per client at once, not timed here), one key lookup per job.
 * Run by `npm run bench -- index` in its own process, after every other scenario; alone:
 *   bun bench/index.ts '{"jobs":1000000,"samples":200}'
 * Env: BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432/postgres; "none" skips PostgreSQL).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import type { JobStatus, JobView } from "../shared/domain/index.ts";
import { createJobIdDeriver } from "../shared/ids/index.ts";
import {
  type IndexStore,
  type JobFilter,
  openPostgresIndex,
  openSqliteIndex,
  type PagePosition,
  withRequestIdLookup,
} from "../shared/search/index.ts";

interface Spec {
  readonly jobs: number;
  readonly samples: number;
  /** Which engines to measure (default both; PostgreSQL only when reachable). */
  readonly engines: readonly ("sqlite" | "postgres")[];
}
const spec: Spec = {
  jobs: 1_000_000,
  samples: 200,
  engines: ["sqlite", "postgres"],
  ...JSON.parse(process.argv[2] ?? "{}"),
};

const CLIENTS = 20;
const ROUTES = 50;
const TENANTS = 1_000;
const CODES = [
  "executor_unavailable",
  "deadline_exceeded",
  "cancelled",
  "executor_refused",
  "route_disabled",
  "worker_error",
  "input_too_large",
  "executor_bad_response",
  "tool_set_unknown",
  "route_unknown",
];
const DAY = 86_400_000;
const START = Date.parse("2026-10-01T00:00:00.000Z");
const SPAN = 30 * DAY;

/** A deterministic pseudo-random sequence (xorshift), so every run indexes the same jobs. */
function rng(seed: number) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4_294_967_296;
  };
}

const deriveJobId = createJobIdDeriver(new Uint8Array(32).fill(7));
/** Creation time of each job id written: what the hub reads from the job's run.requested. */
const createdOf = new Map<string, number>();

const pick = <T>(r: () => number, list: readonly T[]) => list[Math.floor(r() * list.length)] as T;
const clientOf = (i: number) => `c${String(i).padStart(2, "0")}`;
const routeOf = (i: number) => `route.r${String(i).padStart(2, "0")}`;

/** Job n: 90 % done, 5 % error, 2 % rejected, the rest open; a tenant on 70 %, a callback on half. */
function syntheticJob(n: number, r: () => number): { view: JobView; tenant: string | undefined } {
  const created = START + Math.floor((n / spec.jobs) * SPAN);
  const roll = r();
  const status: JobStatus =
    roll < 0.9
      ? "done"
      : roll < 0.95
        ? "error"
        : roll < 0.97
          ? "rejected"
          : pick(r, ["queued", "dispatched", "running"] as const);
  const final = status === "done" || status === "error" || status === "rejected";
  const at = new Date(created).toISOString();
  const cb = r() < 0.5 ? (r() < 0.02 ? "failed" : r() < 0.99 ? "delivered" : "pending") : undefined;
  const client = clientOf(Math.floor(r() * CLIENTS));
  const view: JobView = {
    job_id: deriveJobId(client, `req-${n}`),
    client_id: client,
    request_id: `req-${n}`,
    route: routeOf(Math.floor(r() * ROUTES)),
    status,
    created_at: at,
    updated_at: at,
    ...(final ? { completed_at: at } : {}),
    ...(status === "done" ? { output: { ok: true, n } } : {}),
    ...(status === "error" || status === "rejected"
      ? { error: { code: pick(r, CODES), message: "failed" } }
      : {}),
    ...(cb ? { callback: { status: cb, attempts: cb === "failed" ? 8 : 1 } } : {}),
    fingerprint: "0".repeat(64),
    seq: n + 1,
  };
  return { view, tenant: r() < 0.7 ? `tenant-${Math.floor(r() * TENANTS)}` : undefined };
}

async function fill(store: IndexStore, log: (s: string) => void): Promise<number> {
  const r = rng(42);
  const owner = await store.claim();
  const started = performance.now();
  const batch = 5_000;
  for (let n = 0; n < spec.jobs; n += batch) {
    const rows = [];
    for (let i = n; i < Math.min(spec.jobs, n + batch); i++) {
      const row = syntheticJob(i, r);
      createdOf.set(row.view.job_id, Date.parse(row.view.created_at));
      rows.push(row);
    }
    await store.apply({
      owner,
      rows,
      counts: [],
      position: { appliedSeq: n + batch, pending: 0, updatedMs: Date.now(), stream: "bench" },
    });
    if (n % 100_000 === 0) log(`${store.backend}: ${n} of ${spec.jobs} rows`);
  }
  return (performance.now() - started) / 1000;
}

interface QueryCase {
  readonly name: string;
  readonly filter: (r: () => number) => JobFilter;
}

const window = (r: () => number) => {
  const from = START + Math.floor(r() * (SPAN - DAY));
  return { createdFromMs: from, createdBeforeMs: from + DAY };
};

const CASES: readonly QueryCase[] = [
  { name: "client", filter: (r) => ({ clientIds: [clientOf(Math.floor(r() * CLIENTS))] }) },
  {
    name: "client+status",
    filter: (r) => ({ clientIds: [clientOf(Math.floor(r() * CLIENTS))], statuses: ["error"] }),
  },
  {
    name: "client+route",
    filter: (r) => ({
      clientIds: [clientOf(Math.floor(r() * CLIENTS))],
      routes: [routeOf(Math.floor(r() * ROUTES))],
    }),
  },
  {
    name: "client+2 statuses+route",
    filter: (r) => ({
      clientIds: [clientOf(Math.floor(r() * CLIENTS))],
      statuses: ["error", "rejected"],
      routes: [routeOf(Math.floor(r() * ROUTES))],
    }),
  },
  {
    name: "client+time window",
    filter: (r) => ({ clientIds: [clientOf(Math.floor(r() * CLIENTS))], ...window(r) }),
  },
  { name: "status", filter: () => ({ statuses: ["error"] }) },
  { name: "route", filter: (r) => ({ routes: [routeOf(Math.floor(r() * ROUTES))] }) },
  { name: "error_code", filter: (r) => ({ errorCodes: [pick(r, CODES)] }) },
  { name: "tenant", filter: (r) => ({ tenants: [`tenant-${Math.floor(r() * TENANTS)}`] }) },
  { name: "request_id", filter: (r) => ({ requestId: `req-${Math.floor(r() * spec.jobs)}` }) },
  { name: "time window", filter: (r) => window(r) },
  { name: "callback failed", filter: () => ({ callbackStatuses: ["failed"] }) },
  {
    name: "status+route+tenant",
    filter: (r) => ({
      statuses: ["done"],
      routes: [routeOf(Math.floor(r() * ROUTES))],
      tenants: [`tenant-${Math.floor(r() * TENANTS)}`],
    }),
  },
  {
    name: "client+error_code+window",
    filter: (r) => ({
      clientIds: [clientOf(Math.floor(r() * CLIENTS))],
      errorCodes: [pick(r, CODES)],
      ...window(r),
    }),
  },
];

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

/** p50/p99 of one query case: first pages, and deep pages (a cursor at a random point in time). */
async function time(
  store: IndexStore,
  c: QueryCase,
  deep: boolean,
): Promise<{ p50: number; p99: number; rows: number }> {
  const r = rng(c.name.length * 7919 + (deep ? 1 : 0));
  const ms: number[] = [];
  let rows = 0;
  for (let i = 0; i < spec.samples; i++) {
    const filter = c.filter(r);
    const after: PagePosition | undefined = deep
      ? { createdMs: START + Math.floor(r() * SPAN), jobId: "job_zzzzzzzzzzzzzzzzzzzzzz" }
      : undefined;
    const t0 = performance.now();
    const page = await store.page({ filter, limit: 50, ...(after ? { after } : {}) });
    // What the API adds per page: the records to JSON.
    JSON.stringify(page.views);
    ms.push(performance.now() - t0);
    rows += page.views.length;
  }
  ms.sort((a, b) => a - b);
  return { p50: quantile(ms, 0.5), p99: quantile(ms, 0.99), rows: Math.round(rows / spec.samples) };
}

async function runEngine(written: IndexStore, log: (s: string) => void) {
  await written.migrate();
  await written.reset();
  const fillSec = await fill(written, log);
  const store = withRequestIdLookup(written, {
    deriveJobId,
    createdMsOf: async ({ jobId }) => createdOf.get(jobId),
    streamReachable: () => true,
  });
  // As after `switchyard index rebuild` (and hourly in the indexer): the planner's statistics.
  await store.optimize();
  const results: Record<
    string,
    {
      first: { p50: number; p99: number; rows: number };
      deep: { p50: number; p99: number; rows: number };
    }
  > = {};
  for (const c of CASES) {
    results[c.name] = { first: await time(store, c, false), deep: await time(store, c, true) };
    log(
      `${store.backend} ${c.name}: p99 first ${results[c.name]?.first.p99.toFixed(1)} ms, deep ${results[c.name]?.deep.p99.toFixed(1)} ms`,
    );
  }
  return { fillSec, rowsPerSec: spec.jobs / fillSec, queries: results };
}

const log = (s: string) => process.stderr.write(`[index bench] ${s}\n`);
const out: Record<string, unknown> = { jobs: spec.jobs, samples: spec.samples, limit: 50 };
const dir = mkdtempSync(join(tmpdir(), "switchyard-index-bench-"));
try {
  if (spec.engines.includes("sqlite")) {
    const sqlite = openSqliteIndex(join(dir, "index.sqlite"));
    out.sqlite = await runEngine(sqlite, log);
    await sqlite.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const pgAdmin = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
if (pgAdmin !== "none" && spec.engines.includes("postgres")) {
  const name = `sy_index_bench_${process.pid}`;
  const admin = new SQL(pgAdmin, { max: 1 });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
    const store = openPostgresIndex(pgAdmin.replace(/\/[^/]*$/, `/${name}`));
    try {
      out.postgres = await runEngine(store, log);
    } finally {
      await store.close();
    }
  } catch (err) {
    out.postgres = { skipped: (err as Error).message };
  } finally {
    await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await admin.close();
  }
}
console.log(`RESULT ${JSON.stringify(out)}`);
