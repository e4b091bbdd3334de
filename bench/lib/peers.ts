/**
 * The peers the hub is measured against, started and stopped by the benchmark: Fastify + BullMQ on
 * the machine's Redis (not durable), Fastify + graphile-worker on the machine's PostgreSQL
 * (durable, synchronous_commit on), and the JetStream floor (floor-peer.ts: the least work a job
 * can cost on the hub's own stack, the bound for the goals against BullMQ). Both answer POST /run and GET /jobs/:id as the hub does and
 * send the same signed callbacks, so the same load generator and receiver measure all three.
 *
 * Each peer cleans up what it made: the Redis peer its keys (its own prefix, SCAN + DEL, never
 * FLUSHALL), the PostgreSQL peer its database (DROP DATABASE ... WITH (FORCE)), on exit and SIGINT.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { Queue } from "bullmq";
import { RedisClient } from "bun";
import { runMigrations } from "graphile-worker";
import pg from "pg";
import { redisConnection } from "../peer/bullmq-common.ts";
import { quietLogger, SCHEMA_SQL } from "../peer/pg-common.ts";
import { freePort, LOOPBACK, ROOT, registerCleanup, round, spawnChild } from "./common.ts";
import { type FloorName, type FloorPeer, isFloorName, startFloorPeer } from "./floor-peer.ts";
import type { ProcessTable } from "./procs.ts";

export const PEER_NAMES = [
  "bullmq",
  "bullmq-node",
  "pg",
  "floor",
  "floor-split",
  "floor-feed",
] as const;
export type PeerName = (typeof PEER_NAMES)[number];

export const PEER_LABELS: Record<PeerName, string> = {
  bullmq: "BullMQ peer on Bun (Fastify + BullMQ on Bun's Redis client, Redis)",
  "bullmq-node": "BullMQ peer on Node (Fastify + BullMQ + ioredis, as BullMQ's docs run it)",
  pg: "PostgreSQL peer (Fastify + graphile-worker)",
  floor: "JetStream floor (Fastify + nats.js, 3 events + 1 KV write)",
  "floor-split": "split floor (the floor as server, executor, callback and views processes)",
  "floor-feed":
    "feed floor (the split floor whose views fold every event from one feed, as the hub's read models)",
};

/** What the benchmark needs from a running peer. */
export interface Peer {
  readonly name: PeerName;
  readonly base: string;
  /** Names in the process table whose CPU is the peer's (server, worker, store). */
  readonly procs: readonly string[];
  readonly facts: Readonly<Record<string, string>>;
  /** Waits until its queue is empty; seconds taken, NaN after `timeoutSec`. */
  drain(label: string, timeoutSec: number): Promise<number>;
}

export interface PeerDeps {
  readonly bun: string;
  readonly token: string;
  readonly webhookSecret: string;
  readonly procs: ProcessTable;
  readonly log: (line: string) => void;
  readonly notes: string[];
  /** Runtime settings the floors' processes run with, as the hub's services do (allocator-env.ts). */
  readonly floorEnv?: Readonly<Record<string, string>>;
}

/** BENCH_PEER: all (default), none or 0, or a comma list of peer names. */
export function parsePeerSelection(value: string | undefined): PeerName[] {
  const v = (value ?? "all").trim().toLowerCase();
  if (v === "" || v === "all" || v === "1") return [...PEER_NAMES];
  if (v === "0" || v === "none") return [];
  const names = v.split(",").map((s) => s.trim());
  for (const n of names) {
    if (!PEER_NAMES.includes(n as PeerName)) {
      throw new Error(
        `BENCH_PEER: unknown peer '${n}'; use all, none (or 0), or a comma list of ${PEER_NAMES.join(", ")}`,
      );
    }
  }
  return PEER_NAMES.filter((n) => names.includes(n));
}

async function waitEmpty(
  count: () => Promise<number>,
  what: string,
  deps: Pick<PeerDeps, "log" | "notes">,
  timeoutSec: number,
): Promise<number> {
  const start = Date.now();
  while (Date.now() < start + timeoutSec * 1000) {
    if ((await count()) === 0) {
      const sec = round((Date.now() - start) / 1000, 1);
      deps.log(`${what} drained in ${sec} s`);
      return sec;
    }
    await Bun.sleep(250);
  }
  deps.notes.push(`${what} did not drain within ${timeoutSec} s`);
  return Number.NaN;
}

export function peerEnv(deps: PeerDeps, port: number, extra: Record<string, string>) {
  return {
    PORT: String(port),
    PEER_TOKEN: deps.token,
    WEBHOOK_SECRET: deps.webhookSecret,
    NODE_ENV: "production",
    ...extra,
  };
}

async function deleteRedisKeys(url: string, prefix: string): Promise<number> {
  const client = new RedisClient(url);
  let cursor = "0";
  let deleted = 0;
  do {
    const [next, keys] = (await client.send("SCAN", [
      cursor,
      "MATCH",
      `${prefix}:*`,
      "COUNT",
      "1000",
    ])) as [string, string[]];
    cursor = next;
    if (keys.length > 0) deleted += (await client.send("DEL", keys)) as number;
  } while (cursor !== "0");
  client.close();
  return deleted;
}

/**
 * The Node peer runs the same server and worker files, bundled for Node by `bun build` (local
 * files inlined, packages left to Node's own resolution from node_modules), since Node 20 does not
 * run TypeScript. The bundle goes under bench/.build (git-ignored) so node_modules resolves.
 */
function buildForNode(deps: PeerDeps): { server: string[]; worker: string[] } {
  const outdir = join(ROOT, "bench/.build/bullmq-node");
  const entries = ["bench/peer/bullmq-server.ts", "bench/peer/bullmq-worker.ts"];
  const built = Bun.spawnSync(
    [deps.bun, "build", "--target=node", "--packages=external", "--outdir", outdir, ...entries],
    { cwd: ROOT, stdout: "pipe", stderr: "pipe" },
  );
  if (built.exitCode !== 0) {
    throw new Error(`BullMQ Node peer: bun build failed: ${built.stderr.toString().trim()}`);
  }
  const node = Bun.which("node");
  if (!node) throw new Error("BullMQ Node peer: node is not on the PATH (install Node.js ≥ 20)");
  return {
    server: [node, join(outdir, "bullmq-server.js")],
    worker: [node, join(outdir, "bullmq-worker.js")],
  };
}

export async function startBullmqPeer(deps: PeerDeps, runtime: "bun" | "node"): Promise<Peer> {
  const name: PeerName = runtime === "bun" ? "bullmq" : "bullmq-node";
  const redisUrl = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const prefix = `swbench${randomBytes(3).toString("hex")}`;
  const port = freePort();
  const env = peerEnv(deps, port, { PEER_PREFIX: prefix, REDIS_URL: redisUrl });
  const cmds =
    runtime === "node"
      ? buildForNode(deps)
      : {
          server: [deps.bun, join(ROOT, "bench/peer/bullmq-server.ts")],
          worker: [deps.bun, join(ROOT, "bench/peer/bullmq-worker.ts")],
        };
  const serverName = `${name}-server`;
  const workerName = `${name}-worker`;
  const server = spawnChild(serverName, cmds.server, env);
  const worker = spawnChild(workerName, cmds.worker, env);
  registerCleanup(async () => {
    // Stopped first, so nothing writes keys again after they are deleted.
    await Promise.all([server.stop(), worker.stop()]);
    const n = await deleteRedisKeys(redisUrl, prefix);
    deps.log(`removed ${n} BullMQ peer keys (${prefix}:*)`);
  });
  await server.waitForLine(/LISTENING/);
  await worker.waitForLine(/READY/);
  deps.procs.trackPid(serverName, server.pid);
  deps.procs.trackPid(workerName, worker.pid);
  // The machine's Redis serves the peer: its CPU and memory are read (never touched).
  const redisPid = Number(
    Bun.spawnSync(["pgrep", "-x", "redis-server"]).stdout.toString().trim().split("\n")[0] ?? "",
  );
  const procs = [serverName, workerName];
  if (redisPid > 0) {
    deps.procs.trackPid("redis-server", redisPid);
    procs.push("redis-server");
  } else deps.notes.push("redis-server pid not found: the BullMQ peer's CPU leaves Redis out");
  const queue = new Queue("runs", { connection: redisConnection(), prefix });
  registerCleanup(() => queue.close());
  deps.log(`${PEER_LABELS[name]} up at http://${LOOPBACK}:${port} (prefix ${prefix})`);
  return {
    name,
    base: `http://${LOOPBACK}:${port}`,
    procs,
    facts: {
      store: "Redis (machine's, shared)",
      prefix,
      runtime: runtime === "node" ? `Node ${nodeVersion()}, ioredis` : `Bun ${Bun.version}`,
    },
    drain: (label, timeoutSec) =>
      waitEmpty(
        async () => {
          const counts = await queue.getJobCounts("waiting", "active", "delayed", "prioritized");
          return Object.values(counts).reduce((a, b) => a + b, 0);
        },
        `${name} peer after ${label}`,
        deps,
        timeoutSec,
      ),
  };
}

/** PostgreSQL processes whose CPU is the peer's: its database's backends and the WAL/checkpoint work. */
const PG_PIDS = `
SELECT pid FROM pg_stat_activity
WHERE datname = $1
   OR backend_type IN ('checkpointer', 'background writer', 'walwriter', 'autovacuum launcher')`;

export async function startPgPeer(deps: PeerDeps): Promise<Peer> {
  const adminUrl = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const database = `swbench_${randomBytes(4).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect().catch((err: Error) => {
    throw new Error(
      `PostgreSQL peer: cannot connect to ${adminUrl} (${err.message}); start it with ` +
        "`pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`, or BENCH_PEER=bullmq",
    );
  });
  await admin.query(`CREATE DATABASE ${database}`);
  const children: { stop(): Promise<void> }[] = [];
  let pids: number[] = [];
  const refreshPids = async () => {
    pids = (await admin.query<{ pid: number }>(PG_PIDS, [database])).rows.map((r) => r.pid);
  };
  const refresher = setInterval(() => void refreshPids().catch(() => {}), 1_000);
  registerCleanup(async () => {
    clearInterval(refresher);
    for (const child of children) await child.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
    deps.log(`dropped PostgreSQL peer database ${database}`);
  });
  await admin.query(`ALTER DATABASE ${database} SET synchronous_commit = on`);
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const dbUrl = url.toString();
  const setup = new pg.Client({ connectionString: dbUrl });
  await setup.connect();
  await setup.query(SCHEMA_SQL);
  await runMigrations({ connectionString: dbUrl, logger: quietLogger });
  const syncCommit = (await setup.query<{ synchronous_commit: string }>("SHOW synchronous_commit"))
    .rows[0]?.synchronous_commit;
  const version = (await setup.query<{ server_version: string }>("SHOW server_version")).rows[0]
    ?.server_version;
  registerCleanup(() => setup.end());
  const port = freePort();
  const env = peerEnv(deps, port, { PG_URL: dbUrl });
  const worker = spawnChild("pg-worker", [deps.bun, join(ROOT, "bench/peer/pg-worker.ts")], env);
  children.push(worker);
  await worker.waitForLine(/READY/);
  const server = spawnChild("pg-server", [deps.bun, join(ROOT, "bench/peer/pg-server.ts")], env);
  children.push(server);
  await server.waitForLine(/LISTENING/);
  deps.procs.trackPid("pg-server", server.pid);
  deps.procs.trackPid("pg-worker", worker.pid);
  await refreshPids();
  deps.procs.track("postgres", () => pids, "pss");
  deps.log(`PostgreSQL peer up at http://${LOOPBACK}:${port} (database ${database})`);
  return {
    name: "pg",
    base: `http://${LOOPBACK}:${port}`,
    procs: ["pg-server", "pg-worker", "postgres"],
    facts: {
      store: `PostgreSQL ${version ?? "?"} (machine's, shared)`,
      database,
      synchronous_commit: syncCommit ?? "?",
      batching: process.env.PG_BATCH === "0" ? "off" : "local queue + batched completions",
    },
    drain: (label, timeoutSec) =>
      waitEmpty(
        async () =>
          (await setup.query<{ n: number }>("SELECT count(*)::int AS n FROM graphile_worker.jobs"))
            .rows[0]?.n ?? 0,
        `PostgreSQL peer after ${label}`,
        deps,
        timeoutSec,
      ),
  };
}

function nodeVersion(): string {
  const node = Bun.which("node");
  return node ? Bun.spawnSync([node, "--version"]).stdout.toString().trim() : "?";
}

/**
 * A floor whose work is spread over `partitions` streams and view buckets, with a monitor of its
 * nats-server's counters (the partitions run).
 */
export function startPartitionedFloor(
  name: FloorName,
  deps: PeerDeps,
  partitions: number,
): Promise<FloorPeer> {
  return startFloorPeer(deps, {
    name,
    partitions,
    monitor: true,
    waitEmpty: (count, what, timeoutSec) => waitEmpty(count, what, deps, timeoutSec),
  });
}

export function startPeer(name: PeerName, deps: PeerDeps): Promise<Peer> {
  if (isFloorName(name))
    return startFloorPeer(deps, {
      name,
      waitEmpty: (count, what, timeoutSec) => waitEmpty(count, what, deps, timeoutSec),
    });
  if (name === "bullmq") return startBullmqPeer(deps, "bun");
  if (name === "bullmq-node") return startBullmqPeer(deps, "node");
  return startPgPeer(deps);
}
