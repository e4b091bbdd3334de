/**
 * `npm run bench [-- <scenario>...]`: Switchyard's benchmarks against the ceiling and two peers
 * measured in the same run (issues 9 and 14). Scenarios: ingress (with ceiling and peers), replay,
 * get, e2e, paths (JetStream cost of the retry paths), compiler, ratelimit (the shared per-client rate limit's cost per POST /run, bench/lib/ratelimit-scenario.ts), index (the search index: CPU per job with and without it, and queries over 1,000,000 indexed jobs; runs last); memory and idle CPU are measured throughout. Default: all of them.
 *
 * Starts its own nats-server (random port, temp store, monitoring port for its counters), the hub
 * as Kubernetes deploys it (`bun services/cli/main.ts serve <svc...>`, production, log level warn:
 * ingress, read-models = `serve projector indexer`, executor, callback), the
 * ceiling, the callback receiver and the peers (Fastify + BullMQ on the machine's Redis, keys under
 * a prefix; Fastify + graphile-worker on the machine's PostgreSQL, a database of its own), and runs
 * the load generator as its own process. Prints a report and writes bench/results/<timestamp>.json.
 *
 * Env: BENCH_DURATION (s, default 20), BENCH_E2E_JOBS (default 50000), BENCH_RATE (default 500),
 * BENCH_CONNECTIONS (default 64), BENCH_PATH_JOBS (jobs per path in `paths`, default 1000), BENCH_IDLE_SEC (quiet window for idle CPU, default
 * 60), BENCH_SETTLE_SEC (wait after start-up before the first idle window, default 30), BENCH_DRAIN_TIMEOUT (s, default 600), BENCH_INDEX_E2E_JOBS (closed-loop jobs of
 * each loop of the index scenario's with/without comparison, default 20000), BENCH_INDEX_PAIRS
 * (its on/off pairs of loops, default 3), BENCH_INDEX_JOBS (jobs indexed for
 * its query timings, default 1000000), BENCH_PEER (all, none or 0, bullmq, bullmq-node, pg, floor, floor-split, floor-feed,
 * or a comma list), REDIS_URL, BENCH_PG_URL, PG_BATCH=0 (graphile-worker without batching),
 * BENCH_SMOL=1 (services under bun --smol), BENCH_RAM_SIZE (bytes JSC sizes the services' heap
 * for; default 512 MiB as in the manifests, 0 to leave unset), BENCH_ALLOCATOR_ENV=0 (the hub's
 * services and the floors without the image's allocator settings, lib/allocator-env.ts), BENCH_PROFILE=<svc,...> (processes
 * under --cpu-prof, by process or service name: read-models, or projector or indexer for it;
 * summarise the profile with `bun bench/profile.ts <file>`), BENCH_PARTITIONS (a
 * partition count or a comma list such as 1,8,16: instead of the scenarios, the hub at each P with
 * a fresh store, side by side: idle CPU and the e2e closed loop, then the floors BENCH_PEER names
 * (floor, floor-split; the other peers are left out) at the same P; with BENCH_E2E_JOBS=0 the idle
 * window only; bench/lib/partitions.ts), BENCH_STAMP_EVERY (one hub e2e job in this many gets its
 * stages timed by bench/latency-stages.ts, default 10; 0: none), BENCH_WATCH_BACKLOG=1 (poll every
 * consumer's backlog during the hub's closed loop: peaks and means, at a latency cost to the hub),
 * BENCH_WARMUP_JOBS (jobs each system runs, unmeasured, before its e2e closed loop, default 40000;
 * 0: none), BENCH_E2E_ROUNDS (closed loops per system in the e2e scenario, interleaved, each
 * system's median round reported; default 1: one loop each, the hub first; lib/e2e-rounds.ts),
 * BENCH_NATS_PROFILE=1 (the hub's and the floors' nats-servers with Go's profiler on a free port,
 * its address logged; lib/common.ts natsProfileArgs).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { hashToken } from "../shared/auth/index.ts";
import { TOPOLOGY } from "../shared/bus/topology.ts";
import { startNatsServer } from "../shared/nats/index.ts";
import type { Measured } from "./compiler.ts";
import { ALLOCATOR_ENV } from "./lib/allocator-env.ts";
import {
  cleanupAll,
  cpuProfileArgs,
  freePort,
  installExitHandlers,
  LOOPBACK,
  natsProfileArgs,
  ROOT,
  registerCleanup,
  registerTempDir,
  round,
  spawnChild,
  waitHttp,
} from "./lib/common.ts";
import { e2eRoundsScenario } from "./lib/e2e-rounds.ts";
import { isFloorName } from "./lib/floor-peer.ts";
import { indexScenario, renderIndexReport } from "./lib/index-scenario.ts";
import { createJetStreamMonitor, type JetStreamMonitor, monitorPort } from "./lib/jetstream.ts";
import {
  parsePartitionList,
  partitionGoals,
  partitionsScenario,
  savePartitionsRun,
} from "./lib/partitions.ts";
import { type Peer, parsePeerSelection, startPartitionedFloor, startPeer } from "./lib/peers.ts";
import { HUB_PROCESS_SERVICES, HUB_PROCS, HUB_SERVICES, type HubService } from "./lib/phase.ts";
import { createProcessTable } from "./lib/procs.ts";
import { ratelimitScenario, renderRatelimitReport } from "./lib/ratelimit-scenario.ts";
import { type BenchResults, renderReport } from "./lib/report.ts";
import {
  type BenchContext,
  e2eScenario,
  getScenario,
  ingressScenario,
  measureIdle,
  pathsScenario,
  replayScenario,
} from "./lib/scenarios.ts";

const SCENARIOS = [
  "ingress",
  "replay",
  "get",
  "e2e",
  "paths",
  "ratelimit",
  "compiler",
  "index",
] as const;
type Scenario = (typeof SCENARIOS)[number];

const args = process.argv.slice(2).filter((a) => !a.startsWith("-"));
for (const a of args) {
  if (!SCENARIOS.includes(a as Scenario) && a !== "memory") {
    process.stderr.write(`unknown scenario '${a}'; choose from ${SCENARIOS.join(", ")}, memory\n`);
    process.exit(2);
  }
}
const wanted = new Set<string>(args.length > 0 ? args : SCENARIOS);
if (wanted.has("memory") && wanted.size === 1) wanted.add("ingress");
const env = process.env;
const DURATION = Number(env.BENCH_DURATION ?? 20);
// /proc counts CPU in 10 ms ticks: over 20 s that is ±0.0005 cores per process, ±0.002 for the
// four of the hub, a fifth of the idle goal. 60 s brings it to ±0.0008 for the whole hub.
const IDLE_SEC = Number(env.BENCH_IDLE_SEC ?? 60);
const SETTLE_SEC = Number(env.BENCH_SETTLE_SEC ?? 30);
let PEERS: ReturnType<typeof parsePeerSelection>;
let PARTITIONS: number[] | undefined;
try {
  PEERS = parsePeerSelection(env.BENCH_PEER);
  PARTITIONS = parsePartitionList(env.BENCH_PARTITIONS);
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(2);
}
const settings = {
  durationSec: DURATION,
  e2eJobs: Number(env.BENCH_E2E_JOBS ?? 50_000),
  pathJobs: Number(env.BENCH_PATH_JOBS ?? 1000),
  rate: Number(env.BENCH_RATE ?? 500),
  connections: Number(env.BENCH_CONNECTIONS ?? 64),
  drainTimeoutSec: Number(env.BENCH_DRAIN_TIMEOUT ?? 600),
  // One hub job in this many gets its stages timed (bench/latency-stages.ts); 0: none.
  stampEvery: Number(env.BENCH_STAMP_EVERY ?? 10),
  // Off unless BENCH_WATCH_BACKLOG=1: polling /jsz holds nats-server's locks, a cost only the hub
  // would pay (docs/performance.md, "Where a job waits").
  watchBacklog: env.BENCH_WATCH_BACKLOG === "1",
  // Unmeasured jobs through each system's closed loop first (docs/performance.md, "Warm-up").
  warmupJobs: Number(env.BENCH_WARMUP_JOBS ?? 40_000),
  e2eRounds: Number(env.BENCH_E2E_ROUNDS ?? 1),
};
if (!Number.isInteger(settings.e2eRounds) || settings.e2eRounds < 1) {
  process.stderr.write(
    `BENCH_E2E_ROUNDS must be a whole number of 1 or more, got "${env.BENCH_E2E_ROUNDS}"\n`,
  );
  process.exit(2);
}
const BUN = process.execPath;
/**
 * The memory JavaScriptCore sizes the services' heap for, as the Kubernetes manifests give each
 * (BUN_JSC_forceRAMSize from limits.memory, 512Mi); without it JSC sizes the heap for the host's
 * RAM and lets garbage pile up. BENCH_RAM_SIZE=0 leaves it unset (undefined).
 */
const HUB_RAM_SIZE =
  env.BENCH_RAM_SIZE === "0" ? undefined : (env.BENCH_RAM_SIZE ?? String(512 * 1024 * 1024));
/**
 * The allocator settings of the image and the systemd unit (allocator-env.ts), for the hub's
 * services and the floors; BENCH_ALLOCATOR_ENV=0 leaves them unset (Bun's defaults).
 */
const SERVICE_ALLOCATOR_ENV = env.BENCH_ALLOCATOR_ENV === "0" ? {} : ALLOCATOR_ENV;

const log = (line: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

const results: BenchResults = {
  startedAt: new Date().toISOString(),
  machine: {},
  versions: {},
  settings: {
    ...settings,
    idleWindowSec: IDLE_SEC,
    settleSec: SETTLE_SEC,
    peers: PEERS,
    smol: env.BENCH_SMOL === "1",
    jscRamSizeBytes: HUB_RAM_SIZE === undefined ? null : Number(HUB_RAM_SIZE),
    allocatorEnv: SERVICE_ALLOCATOR_ENV,
  },
  systems: { hub: HUB_PROCS },
  peers: {},
  scenarios: {},
  idle: {},
  memoryMb: {},
  goals: [],
  notes: [],
};

const tokenHub = `sy_bench_${randomBytes(24).toString("base64url")}`;
const tokenPeer = `peer_${randomBytes(24).toString("base64url")}`;
const webhookSecret = `whsec_${randomBytes(24).toString("base64")}`;

/** Secret of the HTTP executor routes' task POSTs (the receiver does not check it). */
const executorSecret = `whsec_${randomBytes(24).toString("base64")}`;

/**
 * The hub's config for every scenario. Callbacks: the one receiver stands for all of a platform's
 * traffic, so it may use every callback slot (per_destination_concurrency = concurrency = 256);
 * with the default 64 per destination the closed loop is bound by the receiver's lane
 * (docs/history/performance.md).
 */
function hubConfig(
  natsUrl: string,
  port: number,
  receiverBase: string,
  index: { readonly path: string; readonly enabled: boolean },
  partitions = 1,
): string {
  return `
index: { enabled: ${index.enabled}, sqlite_path: "${index.path}" }
server: { host: ${LOOPBACK}, port: ${port} }
monitoring: { host: ${LOOPBACK}, port: 0 }
nats: { url: "${natsUrl}", duplicate_window: 2m, partitions: ${partitions} }
log: { level: warn }
callbacks: { allow_cidrs: ["127.0.0.0/8"], concurrency: 256, per_destination_concurrency: 256 }
clients:
  - id: bench
    token_sha256: ["${hashToken(tokenHub)}"]
    routes: ["bench.*"]
    runs_per_minute: 1000000000
    callback_secrets: ["${webhookSecret}"]
    callback_retry_schedule: [100ms]
routes:
  - key: bench.sleep0
    concurrency: 10000
    executor: { kind: builtin, name: sleep, sleep_ms: 0 }
  - key: bench.echo
    concurrency: 10000
    executor: { kind: builtin, name: echo }
  - key: bench.http
    concurrency: 10000
    executor: { kind: http, url: "${receiverBase}/exec", secret: "${executorSecret}", retry_backoff: [100ms] }
  - key: bench.http-retry
    concurrency: 10000
    executor: { kind: http, url: "${receiverBase}/exec-flaky", secret: "${executorSecret}", retry_backoff: [100ms] }
`;
}

function gitDescribe(): string {
  try {
    const git = (...a: string[]) =>
      Bun.spawnSync(["git", ...a], { cwd: ROOT })
        .stdout.toString()
        .trim();
    const dirty = git("status", "--porcelain", "--untracked-files=no");
    return `${git("rev-parse", "--short", "HEAD")}${dirty ? "+dirty" : ""}`;
  } catch {
    return "unknown";
  }
}

/** Whether BENCH_PROFILE names the process or one of the services it runs. */
function profiled(svc: HubService): boolean {
  const names: readonly string[] = [svc, ...HUB_PROCESS_SERVICES[svc]];
  return (env.BENCH_PROFILE ?? "").split(",").some((name) => names.includes(name));
}

function startService(svc: HubService, configPath: string, logLevel = "warn") {
  // BENCH_PROFILE=ingress,read-models: run those processes under the CPU profiler; the profiles
  // (.cpuprofile and a markdown summary) are written to bench/results/profiles on exit.
  // BENCH_SMOL=1: run the services with Bun's --smol (a smaller heap, more frequent GC).
  const smol = env.BENCH_SMOL === "1" ? ["--smol"] : [];
  const profile = profiled(svc) ? cpuProfileArgs(svc) : [];
  return spawnChild(
    svc,
    [
      BUN,
      ...smol,
      ...profile,
      join(ROOT, "services/cli/main.ts"),
      "serve",
      ...HUB_PROCESS_SERVICES[svc],
    ],
    {
      SWITCHYARD_CONFIG: configPath,
      SWITCHYARD_LOG_LEVEL: logLevel,
      NODE_ENV: "production",
      NATS_URL: undefined,
      BUN_JSC_forceRAMSize: HUB_RAM_SIZE,
      ...SERVICE_ALLOCATOR_ENV,
    },
  );
}

/** Waits (through the monitoring endpoint) until the hub's durable consumers exist. */
async function waitConsumers(monitor: JetStreamMonitor): Promise<void> {
  const names: string[] = Object.values(TOPOLOGY.consumers);
  const deadline = Date.now() + 30_000;
  let missing = names;
  while (Date.now() < deadline) {
    const present = Object.values((await monitor.jsz()).consumers).map((c) => c.name);
    missing = names.filter((n) => !present.includes(n));
    if (missing.length === 0) return;
    await Bun.sleep(100);
  }
  throw new Error(`consumers ${missing.join(", ")} did not appear`);
}

async function startHub(receiverBase: string, partitions = 1) {
  // nats-server on a random port with a temp store and the monitoring port (-m -1: random).
  const storeDir = mkdtempSync(join(tmpdir(), "switchyard-bench-nats-"));
  registerTempDir(storeDir);
  const profile = natsProfileArgs();
  const nats = await startNatsServer({
    storeDir,
    env: process.env,
    args: ["-m", "-1", ...profile.args],
  });
  registerCleanup(() => nats.stop("SIGKILL"));
  if (profile.url) log(`hub's nats-server profiler at ${profile.url}`);
  const mport = monitorPort(nats.output());
  if (!mport) throw new Error(`nats-server did not log its monitoring port:\n${nats.output()}`);
  const monitorBase = `http://${LOOPBACK}:${mport}`;
  const monitor = createJetStreamMonitor(monitorBase);
  const varz = (await (await fetch(`${monitorBase}/varz`)).json()) as { version?: string };
  log(`nats-server ${varz.version} at ${nats.url}, monitor ${monitorBase}, store ${storeDir}`);

  const configDir = mkdtempSync(join(tmpdir(), "switchyard-bench-cfg-"));
  registerTempDir(configDir);
  const hubPort = freePort();
  const configPath = join(configDir, "switchyard.yaml");
  // The search index in the config directory (the default path is under the working directory).
  const indexPath = join(configDir, "index.sqlite");
  writeFileSync(
    configPath,
    hubConfig(nats.url, hubPort, receiverBase, { path: indexPath, enabled: true }, partitions),
  );
  const noIndexPath = join(configDir, "switchyard-no-index.yaml");
  writeFileSync(
    noIndexPath,
    hubConfig(nats.url, hubPort, receiverBase, { path: indexPath, enabled: false }, partitions),
  );
  const base = `http://${LOOPBACK}:${hubPort}`;
  const pids: [string, number][] = [["nats-server", nats.pid]];
  const children = new Map<string, ReturnType<typeof startService>>();
  children.set("ingress", startService("ingress", configPath));
  pids.push(["ingress", children.get("ingress")?.pid ?? 0]);
  await waitHttp(`${base}/readyz`);
  for (const svc of HUB_SERVICES) {
    if (svc === "ingress") continue;
    children.set(svc, startService(svc, configPath));
    pids.push([svc, children.get(svc)?.pid ?? 0]);
  }
  await waitConsumers(monitor);
  log(`hub up at ${base}`);
  /**
   * The index scenario's switch: the read models' process with the index on, or with it off (its
   * indexer idle). The projector stops and starts with it, folding from its own durable's floor.
   */
  const restartReadModels = async (indexEnabled: boolean) => {
    await children.get("read-models")?.stop("SIGTERM");
    // At info level for its start lines (one line per service start; nothing per job).
    const child = startService("read-models", indexEnabled ? configPath : noIndexPath, "info");
    children.set("read-models", child);
    await child.waitForLine(/projector started/, 30_000);
    await child.waitForLine(indexEnabled ? /indexer started/ : /nothing to do/, 30_000);
    return child.pid;
  };
  return {
    base,
    monitor,
    pids,
    natsUrl: nats.url,
    natsVersion: varz.version ?? "unknown",
    restartReadModels,
    /** Stops the services, then nats-server (the partitions run starts a fresh hub per P). */
    async stop() {
      for (const child of children.values()) await child.stop("SIGTERM");
      await nats.stop("SIGTERM");
    },
  };
}

async function startHelper(name: string, script: string, extra: Record<string, string>) {
  const port = freePort();
  const child = spawnChild(name, [BUN, join(ROOT, script)], { PORT: String(port), ...extra });
  await child.waitForLine(/LISTENING/);
  return { base: `http://${LOOPBACK}:${port}`, pid: child.pid };
}

async function runCompiler() {
  log("compiler: bench/compiler.ts (switchyard and openapi-mcp-generator, real descriptions)");
  const child = spawnChild("compiler", [BUN, join(ROOT, "bench/compiler.ts")]);
  await child.proc.exited;
  const line = /^COMPILER_RESULT (.*)$/m.exec(child.output())?.[1];
  return { runs: line ? (JSON.parse(line) as Measured[]) : [] };
}

async function main() {
  installExitHandlers();
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
  const cpu = cpus();
  results.machine = {
    cores: cpu.length,
    cpuModel: cpu[0]?.model ?? "unknown",
    memoryGb: round(totalmem() / 2 ** 30, 1),
    loadAverageAtStart: loadavg().map((l) => round(l, 2)),
  };
  const procs = createProcessTable();
  const receiver = await startHelper("receiver", "bench/receiver.ts", {
    WEBHOOK_SECRET: webhookSecret,
  });
  if (PARTITIONS) return runPartitions(PARTITIONS, { procs, receiver, version: pkg.version });
  const hub = await startHub(receiver.base);
  for (const [name, pid] of hub.pids) procs.trackPid(name, pid);
  procs.trackPid("receiver", receiver.pid);
  results.versions = {
    bun: Bun.version,
    nats: hub.natsVersion,
    hub: `${pkg.version} (${gitDescribe()})`,
  };

  const ceiling = await startHelper("ceiling", "bench/ceiling.ts", {
    NATS_URL: hub.natsUrl,
    NODE_ENV: "production",
  });
  procs.trackPid("ceiling", ceiling.pid);

  const peers: Peer[] = [];
  const peerDeps = {
    bun: BUN,
    token: tokenPeer,
    webhookSecret,
    procs,
    log,
    notes: results.notes,
    floorEnv: SERVICE_ALLOCATOR_ENV,
  };
  for (const name of PEERS) {
    const peer = await startPeer(name, peerDeps);
    peers.push(peer);
    results.systems[name] = peer.procs;
    results.peers[name] = peer.facts;
  }

  const switchIndex = async (enabled: boolean) => {
    procs.trackPid("read-models", await hub.restartReadModels(enabled));
  };
  const ctx: BenchContext = {
    bun: BUN,
    procs,
    monitor: hub.monitor,
    settings,
    hub: { base: hub.base, token: tokenHub, natsUrl: hub.natsUrl },
    peerToken: tokenPeer,
    ceilingBase: ceiling.base,
    receiverUrl: receiver.base,
    peers,
    log,
    notes: results.notes,
    switchIndex,
  };
  // Start-up is not idle: the services' first 20–30 s hold their JIT compiles, first collections
  // and lease takeovers (sampled every 10 s, 2026-11-25: the hub used 0.017 cores in its first 10 s and about 0.007 from 30 s on).
  log(`settling ${SETTLE_SEC} s before the idle window`);
  await Bun.sleep(SETTLE_SEC * 1000);
  procs.sampleMemory("idle");
  log(`idle CPU: ${IDLE_SEC} s quiet window`);
  results.idle.fresh = await measureIdle(ctx, IDLE_SEC);
  const sampler = setInterval(() => procs.sampleMemory("peak"), 250);
  registerCleanup(async () => clearInterval(sampler));

  const s = results.scenarios;
  if (wanted.has("ingress")) s.ingress = await ingressScenario(ctx);
  if (wanted.has("replay")) s.replay = await replayScenario(ctx);
  if (wanted.has("get")) s.get = await getScenario(ctx);
  if (wanted.has("e2e")) {
    const rounds = settings.e2eRounds;
    s.e2e = rounds > 1 ? await e2eRoundsScenario(ctx, rounds) : await e2eScenario(ctx);
  }
  if (wanted.has("paths")) s.paths = await pathsScenario(ctx);
  const ratelimit = wanted.has("ratelimit")
    ? await ratelimitScenario(ctx, {
        natsUrl: hub.natsUrl,
        startIngress: (configPath) => startService("ingress", configPath),
      })
    : undefined;

  // After the load: idle CPU over a quiet window, then RSS again.
  clearInterval(sampler);
  log(`idle CPU after the load: ${IDLE_SEC} s quiet window`);
  results.idle.afterLoad = await measureIdle(ctx, IDLE_SEC);
  procs.sampleMemory("after");
  for (const [name, m] of procs.memory()) {
    results.memoryMb[name] = {
      idle: round(m.idle, 1),
      peak: round(m.peak, 1),
      after: round(m.after, 1),
    };
  }
  if (wanted.has("compiler")) s.compiler = await runCompiler();
  // Last, so no other scenario's figures include it (it restarts the read models' process).
  let indexFigures: Awaited<ReturnType<typeof indexScenario>> | undefined;
  if (wanted.has("index")) {
    indexFigures = await indexScenario(ctx, {
      natsUrl: hub.natsUrl,
      jobs: Number(env.BENCH_INDEX_E2E_JOBS ?? 20_000),
      pairs: Number(env.BENCH_INDEX_PAIRS ?? 3),
      queryJobs: Number(env.BENCH_INDEX_JOBS ?? 1_000_000),
      restartReadModels: switchIndex,
    });
    results.notes.push("the index scenario ran last; its figures are in results.index");
  }

  const report =
    renderReport(results) +
    (ratelimit ? renderRatelimitReport(ratelimit) : "") +
    (indexFigures ? renderIndexReport(indexFigures) : "");
  const resultsDir = join(ROOT, "bench/results");
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${results.startedAt.replace(/[:.]/g, "-")}.json`);
  writeFileSync(
    file,
    `${JSON.stringify({ ...results, ratelimit, index: indexFigures }, null, 2)}\n`,
  );
  process.stdout.write(report);
  process.stdout.write(`\nraw figures: ${file}\n`);
}

/** BENCH_PARTITIONS: the hub at each partition count, a fresh store each (bench/lib/partitions.ts). */
async function runPartitions(
  counts: readonly number[],
  deps: {
    procs: ReturnType<typeof createProcessTable>;
    receiver: { base: string; pid: number };
    version: string;
  },
) {
  deps.procs.trackPid("receiver", deps.receiver.pid);
  results.settings.partitions = counts;
  const floors = PEERS.filter(isFloorName);
  const left = PEERS.filter((p) => !floors.includes(p as (typeof floors)[number]));
  if (left.length > 0) {
    results.notes.push(`the partitions run measures the floors only; left out: ${left.join(", ")}`);
  }
  const peerDeps = {
    bun: BUN,
    token: tokenPeer,
    webhookSecret,
    procs: deps.procs,
    log,
    notes: results.notes,
    floorEnv: SERVICE_ALLOCATOR_ENV,
  };
  const figures = await partitionsScenario(
    {
      ctx: {
        bun: BUN,
        procs: deps.procs,
        settings,
        peerToken: tokenPeer,
        ceilingBase: "",
        receiverUrl: deps.receiver.base,
        peers: [],
        log,
        notes: results.notes,
      },
      token: tokenHub,
      settleSec: SETTLE_SEC,
      idleSec: IDLE_SEC,
      floors,
      startFloor: (name, partitions) => startPartitionedFloor(name, peerDeps, partitions),
      startHub: async (partitions) => {
        const hub = await startHub(deps.receiver.base, partitions);
        results.versions = {
          bun: Bun.version,
          nats: hub.natsVersion,
          hub: `${deps.version} (${gitDescribe()})`,
        };
        return hub;
      },
    },
    counts,
  );
  results.goals = partitionGoals(figures);
  savePartitionsRun(results, figures);
}

try {
  await main();
} catch (err) {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
} finally {
  await cleanupAll();
}
process.exit(process.exitCode ?? 0);
