/**
 * `npm run bench [-- <scenario>...]`: Switchyard's benchmarks against the ceiling and a peer
 * measured in the same run (issue 9). Scenarios: ingress (with ceiling and peer), replay, get,
 * e2e, compiler; memory is sampled throughout. Default: all of them.
 *
 * Starts its own nats-server (random port, temp store), the hub as separate processes
 * (`bun services/cli/main.ts serve <svc>`, production, log level warn), the ceiling, the callback
 * receiver and the peer (Fastify + BullMQ on the machine's Redis, keys under a prefix), and runs
 * the load generator as its own process. Prints a table and writes bench/results/<timestamp>.json.
 *
 * Env: BENCH_DURATION (s, default 20), BENCH_E2E_JOBS (default 50000), BENCH_RATE (default 500),
 * BENCH_CONNECTIONS (default 64), BENCH_PEER=0 to skip the peer, REDIS_URL, BENCH_SMOL=1 (services
 * under bun --smol), BENCH_RAM_SIZE (bytes JSC sizes the services' heap for; default 512 MiB
 * as in the manifests, 0 to leave unset), BENCH_PROFILE=<svc,...> (services under --cpu-prof;
 * summarise the profile with `bun bench/profile.ts <file>`).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { type JetStreamManager, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { Queue } from "bullmq";
import { RedisClient } from "bun";
import { WATCHDOG_CONSUMER } from "../services/executor/watchdog.ts";
import { hashToken } from "../shared/auth/index.ts";
import { TOPOLOGY } from "../shared/bus/topology.ts";
import { startNatsServer } from "../shared/nats/index.ts";
import type { E2eResult, E2eSpec } from "./e2e.ts";
import {
  type Child,
  cleanupAll,
  cpuSec,
  freePort,
  installExitHandlers,
  LOOPBACK,
  machineBusySec,
  ROOT,
  readResultLine,
  registerCleanup,
  registerTempDir,
  round,
  rssMb,
  spawnChild,
  waitHttp,
} from "./lib/common.ts";
import type { LoadResult, LoadSpec } from "./load.ts";
import { redisConnection } from "./peer/common.ts";

const SCENARIOS = ["ingress", "replay", "get", "e2e", "compiler"] as const;
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
const E2E_JOBS = Number(env.BENCH_E2E_JOBS ?? 50_000);
const RATE = Number(env.BENCH_RATE ?? 500);
const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 64);
const WITH_PEER = env.BENCH_PEER !== "0";
const BUN = process.execPath;
const HUB_SERVICES = ["ingress", "projector", "executor", "callback"] as const;
type HubService = (typeof HUB_SERVICES)[number];
/**
 * The memory JavaScriptCore sizes the services' heap for, as the Kubernetes manifests give each
 * (BUN_JSC_forceRAMSize from limits.memory, 512Mi); without it JSC sizes the heap for the host's
 * RAM and lets garbage pile up. BENCH_RAM_SIZE=0 leaves it unset (undefined).
 */
const HUB_RAM_SIZE =
  env.BENCH_RAM_SIZE === "0" ? undefined : (env.BENCH_RAM_SIZE ?? String(512 * 1024 * 1024));

const log = (line: string) =>
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

// ---------------------------------------------------------------------------------------------
// Results

interface MemoryFigures {
  idle: number;
  peak: number;
  after: number;
}

const results: {
  startedAt: string;
  machine: Record<string, unknown>;
  versions: Record<string, string>;
  settings: Record<string, unknown>;
  scenarios: Record<string, unknown>;
  memoryMb: Record<string, MemoryFigures>;
  notes: string[];
} = {
  startedAt: new Date().toISOString(),
  machine: {},
  versions: {},
  settings: {
    durationSec: DURATION,
    e2eJobs: E2E_JOBS,
    rate: RATE,
    connections: CONNECTIONS,
    smol: env.BENCH_SMOL === "1",
    jscRamSizeBytes: HUB_RAM_SIZE === undefined ? null : Number(HUB_RAM_SIZE),
  },
  scenarios: {},
  memoryMb: {},
  notes: [],
};

// ---------------------------------------------------------------------------------------------
// Processes

const tokenHub = `sy_bench_${randomBytes(24).toString("base64url")}`;
const tokenPeer = `peer_${randomBytes(24).toString("base64url")}`;
const webhookSecret = `whsec_${randomBytes(24).toString("base64")}`;

function hubConfig(natsUrl: string, port: number): string {
  return `
server: { host: ${LOOPBACK}, port: ${port} }
admin: { host: ${LOOPBACK}, port: 0 }
nats: { url: "${natsUrl}", duplicate_window: 2m }
log: { level: warn }
callbacks: { allow_cidrs: ["127.0.0.0/8"], concurrency: 256 }
clients:
  - id: bench
    token_sha256: ["${hashToken(tokenHub)}"]
    routes: ["bench.*"]
    runs_per_minute: 1000000000
    callback_secrets: ["${webhookSecret}"]
routes:
  - key: bench.sleep0
    concurrency: 10000
    executor: { kind: builtin, name: sleep, sleep_ms: 0 }
  - key: bench.echo
    concurrency: 10000
    executor: { kind: builtin, name: echo }
`;
}

async function runChildResult<T>(
  name: string,
  script: string,
  spec: unknown,
  timeoutMs: number,
): Promise<T> {
  const child = spawnChild(name, [BUN, join(ROOT, script), JSON.stringify(spec)], {
    NODE_ENV: "production",
  });
  const before = cpuSnapshot();
  const machineBefore = machineBusySec();
  const t0 = performance.now();
  try {
    const result = await readResultLine<T>(child, "RESULT", timeoutMs);
    const wallSec = (performance.now() - t0) / 1000;
    const cores: Record<string, number> = {};
    for (const [who, sec] of cpuSnapshot()) {
      cores[who] = round((sec - (before.get(who) ?? 0)) / wallSec, 2);
    }
    cores["load generator"] = round(cpuSec(child.pid) / wallSec, 2);
    // Everything else on the machine (other people's test runs on a shared box): busy cores not
    // accounted to a bench process.
    const machine = (machineBusySec() - machineBefore) / wallSec;
    const ours = Object.values(cores).reduce((a, b) => a + (Number.isNaN(b) ? 0 : b), 0);
    cores["(machine, all)"] = round(machine, 2);
    cores["(others)"] = round(Math.max(0, machine - ours), 2);
    return { ...result, cpuCores: cores };
  } finally {
    await child.stop();
  }
}

/** CPU seconds used so far by every tracked process. */
function cpuSnapshot(): Map<string, number> {
  return new Map([...tracked].map(([who, pid]) => [who, cpuSec(pid)]));
}

function load(spec: LoadSpec): Promise<LoadResult> {
  return runChildResult<LoadResult>("load", "bench/load.ts", spec, (spec.durationSec + 60) * 1000);
}

function e2e(spec: E2eSpec): Promise<E2eResult> {
  return runChildResult<E2eResult>("e2e", "bench/e2e.ts", spec, (spec.timeoutSec + 60) * 1000);
}

// ---------------------------------------------------------------------------------------------
// Memory sampling

const tracked = new Map<string, number>(); // name -> pid
const memory = new Map<string, MemoryFigures>();
let sampler: ReturnType<typeof setInterval> | undefined;

function sampleRss(kind: "idle" | "after" | "peak") {
  for (const [name, pid] of tracked) {
    const mb = rssMb(pid);
    const m = memory.get(name) ?? { idle: Number.NaN, peak: 0, after: Number.NaN };
    if (kind === "idle") m.idle = mb;
    if (kind === "after") m.after = mb;
    if (mb > m.peak) m.peak = mb;
    memory.set(name, m);
  }
}

// ---------------------------------------------------------------------------------------------
// Drains: the next scenario starts only when the previous one's background work is done.

async function consumerLag(jsm: JetStreamManager, name: string): Promise<number> {
  try {
    const info = await jsm.consumers.info(TOPOLOGY.eventsStream, name);
    return info.num_pending + info.num_ack_pending;
  } catch {
    return 0;
  }
}

async function drainHub(jsm: JetStreamManager, label: string, timeoutSec = 600): Promise<number> {
  const start = Date.now();
  const deadline = start + timeoutSec * 1000;
  let lastLagLog = start;
  while (Date.now() < deadline) {
    // The watchdog too: it looks at every run again up to 30 s after its first look, and that
    // second look must not run (and take CPU) during the next scenario, above all the peer's.
    const lags = await Promise.all(
      [
        TOPOLOGY.consumers.executor,
        TOPOLOGY.consumers.projector,
        TOPOLOGY.consumers.callback,
        WATCHDOG_CONSUMER,
      ].map((c) => consumerLag(jsm, c)),
    );
    if (Date.now() - lastLagLog > 5_000) {
      lastLagLog = Date.now();
      log(
        `draining after ${label}: executor ${lags[0]}, projector ${lags[1]}, callback ${lags[2]}, watchdog ${lags[3]}`,
      );
    }
    if (lags.every((l) => l === 0)) {
      const sec = round((Date.now() - start) / 1000, 1);
      log(`hub drained after ${label} in ${sec} s`);
      return sec;
    }
    await Bun.sleep(250);
  }
  results.notes.push(`hub did not drain within ${timeoutSec} s after ${label}`);
  return Number.NaN;
}

async function drainPeer(queue: Queue, label: string, timeoutSec = 600): Promise<number> {
  const start = Date.now();
  const deadline = start + timeoutSec * 1000;
  while (Date.now() < deadline) {
    const counts = await queue.getJobCounts("waiting", "active", "delayed", "prioritized");
    if (Object.values(counts).every((c) => c === 0)) {
      const sec = round((Date.now() - start) / 1000, 1);
      log(`peer drained after ${label} in ${sec} s`);
      return sec;
    }
    await Bun.sleep(250);
  }
  results.notes.push(`peer did not drain within ${timeoutSec} s after ${label}`);
  return Number.NaN;
}

async function deletePeerKeys(prefix: string): Promise<number> {
  const client = new RedisClient(env.REDIS_URL ?? "redis://127.0.0.1:6379");
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

// ---------------------------------------------------------------------------------------------

async function createJobs(base: string, token: string, route: string, prefix: string, n: number) {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < n) {
        const i = next++;
        const res = await fetch(`${base}/run`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ request_id: `${prefix}-${i}`, route, input: `get ${i}` }),
        });
        const job = (await res.json()) as { job_id: string };
        ids.push(job.job_id);
      }
    }),
  );
  return ids;
}

function runBody(route: string, requestId: string, callbackUrl?: string): string {
  return JSON.stringify({
    request_id: requestId,
    route,
    input: "benchmark input text",
    ...(callbackUrl ? { callback_url: callbackUrl } : {}),
  });
}

function gitDescribe(): string {
  try {
    const head = Bun.spawnSync(["git", "rev-parse", "--short", "HEAD"], { cwd: ROOT })
      .stdout.toString()
      .trim();
    const dirty = Bun.spawnSync(["git", "status", "--porcelain", "--untracked-files=no"], {
      cwd: ROOT,
    })
      .stdout.toString()
      .trim();
    return `${head}${dirty ? "+dirty" : ""}`;
  } catch {
    return "unknown";
  }
}

async function main() {
  installExitHandlers();
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
  const cpu = cpus();
  results.machine = {
    cores: cpu.length,
    cpuModel: cpu[0]?.model ?? "unknown",
    memoryGb: round(totalmem() / 2 ** 30, 1),
    loadAverageAtStart: (await import("node:os")).loadavg().map((l) => round(l, 2)),
  };

  // nats-server on a random port with a temp store.
  const storeDir = mkdtempSync(join(tmpdir(), "switchyard-bench-nats-"));
  registerTempDir(storeDir);
  const nats = await startNatsServer({ storeDir, env: process.env });
  registerCleanup(() => nats.stop("SIGKILL"));
  tracked.set("nats-server", nats.pid);
  const nc: NatsConnection = await connect({ servers: nats.url, name: "bench-orchestrator" });
  registerCleanup(() => nc.close());
  const jsm = await jetstreamManager(nc);
  results.versions = {
    bun: Bun.version,
    nats: nc.info?.version ?? "unknown",
    hub: `${pkg.version} (${gitDescribe()})`,
  };
  log(`nats-server ${results.versions.nats} at ${nats.url}, store ${storeDir}`);

  // The hub: one process per service.
  const configDir = mkdtempSync(join(tmpdir(), "switchyard-bench-cfg-"));
  registerTempDir(configDir);
  const hubPort = freePort();
  const configPath = join(configDir, "switchyard.yaml");
  writeFileSync(configPath, hubConfig(nats.url, hubPort));
  const hubBase = `http://${LOOPBACK}:${hubPort}`;
  const services = new Map<HubService, Child>();
  const startService = (svc: HubService) => {
    // BENCH_PROFILE=ingress,projector: run those services under the CPU profiler; the profiles
    // (.cpuprofile and a markdown summary) are written to bench/results/profiles on exit.
    // BENCH_SMOL=1: run the services with Bun's --smol (a smaller heap, more frequent GC).
    const smol = env.BENCH_SMOL === "1" ? ["--smol"] : [];
    const profile = (env.BENCH_PROFILE ?? "").split(",").includes(svc)
      ? [
          "--cpu-prof",
          "--cpu-prof-md",
          `--cpu-prof-dir=${join(ROOT, "bench/results/profiles")}`,
          `--cpu-prof-name=${svc}-${Date.now()}`,
        ]
      : [];
    const child = spawnChild(
      svc,
      [BUN, ...smol, ...profile, join(ROOT, "services/cli/main.ts"), "serve", svc],
      {
        SWITCHYARD_CONFIG: configPath,
        SWITCHYARD_LOG_LEVEL: "warn",
        NODE_ENV: "production",
        NATS_URL: undefined,
        BUN_JSC_forceRAMSize: HUB_RAM_SIZE,
      },
    );
    services.set(svc, child);
    tracked.set(svc, child.pid);
    return child;
  };
  startService("ingress");
  await waitHttp(`${hubBase}/readyz`);
  for (const svc of HUB_SERVICES) if (svc !== "ingress") startService(svc);
  const waitConsumer = async (name: string) => {
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      try {
        await jsm.consumers.info(TOPOLOGY.eventsStream, name);
        return;
      } catch {
        await Bun.sleep(100);
      }
    }
    throw new Error(`consumer ${name} did not appear`);
  };
  await Promise.all(Object.values(TOPOLOGY.consumers).map(waitConsumer));
  const callbacksOn = services.has("callback");
  log(`hub up at ${hubBase} (${[...services.keys()].join(", ")})`);

  // Callback receiver.
  const receiverPort = freePort();
  const receiver = spawnChild("receiver", [BUN, join(ROOT, "bench/receiver.ts")], {
    PORT: String(receiverPort),
    WEBHOOK_SECRET: webhookSecret,
  });
  await receiver.waitForLine(/LISTENING/);
  tracked.set("receiver", receiver.pid);
  const receiverUrl = `http://${LOOPBACK}:${receiverPort}`;

  // Ceiling.
  const ceilingPort = freePort();
  const ceiling = spawnChild("ceiling", [BUN, join(ROOT, "bench/ceiling.ts")], {
    NATS_URL: nats.url,
    PORT: String(ceilingPort),
    NODE_ENV: "production",
  });
  await ceiling.waitForLine(/LISTENING/);
  tracked.set("ceiling", ceiling.pid);
  const ceilingBase = `http://${LOOPBACK}:${ceilingPort}`;

  // Peer.
  const peerPrefix = `swbench${randomBytes(3).toString("hex")}`;
  let peerQueue: Queue | undefined;
  let peerBase = "";
  if (WITH_PEER) {
    const peerPort = freePort();
    const peerEnv = {
      PORT: String(peerPort),
      PEER_TOKEN: tokenPeer,
      PEER_PREFIX: peerPrefix,
      WEBHOOK_SECRET: webhookSecret,
      NODE_ENV: "production",
    };
    registerCleanup(async () => {
      const n = await deletePeerKeys(peerPrefix);
      log(`removed ${n} peer keys (${peerPrefix}:*)`);
    });
    const peerServer = spawnChild(
      "peer-server",
      [BUN, join(ROOT, "bench/peer/server.ts")],
      peerEnv,
    );
    const peerWorker = spawnChild(
      "peer-worker",
      [BUN, join(ROOT, "bench/peer/worker.ts")],
      peerEnv,
    );
    await peerServer.waitForLine(/LISTENING/);
    await peerWorker.waitForLine(/READY/);
    tracked.set("peer-server", peerServer.pid);
    tracked.set("peer-worker", peerWorker.pid);
    peerBase = `http://${LOOPBACK}:${peerPort}`;
    peerQueue = new Queue("runs", { connection: redisConnection(), prefix: peerPrefix });
    registerCleanup(() => (peerQueue as Queue).close());
    log(`peer up at ${peerBase} (prefix ${peerPrefix})`);
  }

  // The machine's Redis serves the peer: its CPU and RSS are read (never touched) for the per-core
  // comparison.
  const redisPid = Number(
    Bun.spawnSync(["pgrep", "-x", "redis-server"]).stdout.toString().trim().split("\n")[0] ?? "",
  );
  if (WITH_PEER && redisPid > 0) tracked.set("redis-server", redisPid);

  await Bun.sleep(2_000);
  sampleRss("idle");
  sampler = setInterval(() => sampleRss("peak"), 250);

  const scenarios = results.scenarios;

  if (wanted.has("ingress")) {
    const body = runBody("bench.sleep0", "ing-[<id>]");
    log(`ceiling: POST /run, ${CONNECTIONS} connections, ${DURATION} s`);
    const ceil = await load({
      url: `${ceilingBase}/run`,
      method: "POST",
      connections: CONNECTIONS,
      durationSec: DURATION,
      body,
    });
    const ceilDrain = await drainHub(jsm, "ceiling");
    log(`ingress: POST /run, ${CONNECTIONS} connections, ${DURATION} s`);
    const hub = await load({
      url: `${hubBase}/run`,
      method: "POST",
      token: tokenHub,
      connections: CONNECTIONS,
      durationSec: DURATION,
      body,
    });
    const hubDrain = await drainHub(jsm, "ingress");
    let peer: LoadResult | undefined;
    let peerDrain = Number.NaN;
    if (peerQueue) {
      log(`peer: POST /run, ${CONNECTIONS} connections, ${DURATION} s`);
      peer = await load({
        url: `${peerBase}/run`,
        method: "POST",
        token: tokenPeer,
        connections: CONNECTIONS,
        durationSec: DURATION,
        body,
      });
      peerDrain = await drainPeer(peerQueue, "peer ingress");
    }
    // The ceiling again, so it brackets the hub's run: on a shared machine the background load
    // drifts, and the ratio uses the mean of the two ceiling runs.
    log(`ceiling again: POST /run, ${CONNECTIONS} connections, ${DURATION} s`);
    const ceilAgain = await load({
      url: `${ceilingBase}/run`,
      method: "POST",
      connections: CONNECTIONS,
      durationSec: DURATION,
      body,
    });
    await drainHub(jsm, "ceiling again");
    const ceilingMean = Math.round((ceil.okPerSec + ceilAgain.okPerSec) / 2);
    scenarios.ingress = {
      ceiling: ceil,
      ceilingAgain: ceilAgain,
      ceilingMeanPerSec: ceilingMean,
      hub,
      peer: peer ?? null,
      ratioToCeiling: round(hub.okPerSec / ceilingMean, 3),
      ratioToPeer: peer ? round(hub.okPerSec / peer.okPerSec, 3) : null,
      backlogDrainSec: { ceiling: ceilDrain, hub: hubDrain, peer: peerDrain },
    };
  }

  if (wanted.has("replay")) {
    const body = runBody("bench.echo", "replay-1");
    const first = await fetch(`${hubBase}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${tokenHub}`, "content-type": "application/json" },
      body,
    });
    await first.arrayBuffer();
    await drainHub(jsm, "replay setup");
    const replayDuration = Math.max(5, Math.round(DURATION / 2));
    log(`replay: the same request_id, ${CONNECTIONS} connections, ${replayDuration} s`);
    const hub = await load({
      url: `${hubBase}/run`,
      method: "POST",
      token: tokenHub,
      connections: CONNECTIONS,
      durationSec: replayDuration,
      body,
    });
    scenarios.replay = { hub, firstStatus: first.status };
  }

  if (wanted.has("get")) {
    const getDuration = Math.max(5, Math.round(DURATION / 2));
    const ids = await createJobs(
      hubBase,
      tokenHub,
      "bench.echo",
      `get-${randomBytes(4).toString("hex")}`,
      1000,
    );
    await drainHub(jsm, "get setup");
    log(
      `get: GET /jobs/{id} over ${ids.length} jobs, ${CONNECTIONS} connections, ${getDuration} s`,
    );
    const hub = await load({
      url: hubBase,
      method: "GET",
      token: tokenHub,
      connections: CONNECTIONS,
      durationSec: getDuration,
      paths: ids.map((id) => `/jobs/${id}`),
    });
    let peer: LoadResult | undefined;
    if (peerQueue) {
      const peerIds = await createJobs(
        peerBase,
        tokenPeer,
        "bench.echo",
        `get-${randomBytes(4).toString("hex")}`,
        1000,
      );
      await drainPeer(peerQueue, "get setup");
      log(`peer get: ${peerIds.length} jobs, ${getDuration} s`);
      peer = await load({
        url: peerBase,
        method: "GET",
        token: tokenPeer,
        connections: CONNECTIONS,
        durationSec: getDuration,
        paths: peerIds.map((id) => `/jobs/${id}`),
      });
    }
    scenarios.get = {
      hub,
      peer: peer ?? null,
      ratioToPeer: peer ? round(hub.okPerSec / peer.okPerSec, 3) : null,
    };
  }

  if (wanted.has("e2e")) {
    const callbackUrl = `${receiverUrl}/cb`;
    if (!callbacksOn)
      results.notes.push("callback service not running: e2e measured without callbacks");
    // Projector lag, peak: polled from consumer info while the e2e runs.
    let lagPeak = 0;
    const lagPoll = setInterval(() => {
      void consumerLag(jsm, TOPOLOGY.consumers.projector).then((l) => {
        if (l > lagPeak) lagPeak = l;
      });
    }, 100);
    const runE2e = async (who: "hub" | "peer", mode: "closed" | "rate") => {
      await fetch(`${receiverUrl}/reset`, { method: "POST" });
      lagPeak = 0;
      const base = who === "hub" ? hubBase : peerBase;
      const common = {
        base,
        token: who === "hub" ? tokenHub : tokenPeer,
        route: "bench.echo",
        prefix: `e2e-${mode}-${randomBytes(4).toString("hex")}`,
        ...(callbacksOn || who === "peer" ? { callbackUrl, receiverUrl } : {}),
      };
      const spec: E2eSpec =
        mode === "closed"
          ? {
              ...common,
              jobs: E2E_JOBS,
              concurrency: CONNECTIONS,
              sampleEvery: 250,
              pollMs: 10,
              timeoutSec: 300,
            }
          : {
              ...common,
              rate: RATE,
              durationSec: DURATION,
              sampleEvery: 10,
              pollMs: 2,
              timeoutSec: DURATION + 120,
            };
      log(
        `e2e ${who} ${mode === "closed" ? `${E2E_JOBS} jobs, ${CONNECTIONS} in flight` : `${RATE} jobs/s for ${DURATION} s`}`,
      );
      const result = await e2e(spec);
      const lag = who === "hub" ? lagPeak : null;
      if (who === "hub") await drainHub(jsm, `e2e ${mode}`);
      else if (peerQueue) await drainPeer(peerQueue, `e2e ${mode}`);
      return { ...result, projectorLagPeak: lag };
    };
    const hubClosed = await runE2e("hub", "closed");
    const hubRate = await runE2e("hub", "rate");
    const peerClosed = peerQueue ? await runE2e("peer", "closed") : null;
    const peerRate = peerQueue ? await runE2e("peer", "rate") : null;
    clearInterval(lagPoll);
    scenarios.e2e = {
      callbacks: callbacksOn,
      hub: { closed: hubClosed, rate: hubRate },
      peer: peerClosed ? { closed: peerClosed, rate: peerRate } : null,
      ratioToPeer: peerClosed
        ? round(hubClosed.completedPerSec / peerClosed.completedPerSec, 3)
        : null,
    };
  }

  // After the load: let everything settle, then read RSS again.
  clearInterval(sampler);
  await Bun.sleep(10_000);
  sampleRss("after");
  for (const [name, m] of memory) {
    results.memoryMb[name] = {
      idle: round(m.idle, 1),
      peak: round(m.peak, 1),
      after: round(m.after, 1),
    };
  }

  if (wanted.has("compiler")) {
    log("compiler: bench/compiler.ts (switchyard and openapi-mcp-generator, real descriptions)");
    const child = spawnChild("compiler", [BUN, join(ROOT, "bench/compiler.ts")]);
    await child.proc.exited;
    const line = /^COMPILER_RESULT (.*)$/m.exec(child.output())?.[1];
    scenarios.compiler = { runs: line ? JSON.parse(line) : [] };
  }

  const resultsDir = join(ROOT, "bench/results");
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${results.startedAt.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(renderTable());
  process.stdout.write(`\nraw figures: ${file}\n`);
}

// ---------------------------------------------------------------------------------------------

function fmt(n: number | null | undefined, digits = 0): string {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  return n.toLocaleString("en-US", {
    maximumFractionDigits: digits,
    minimumFractionDigits: digits,
  });
}

function renderTable(): string {
  const s = results.scenarios as Record<string, Record<string, unknown>>;
  const rows: string[][] = [];
  const add = (...cells: string[]) => rows.push(cells);
  /** CPU per answered request of the process under test, in µs (from /proc, same run). */
  const cpuPer = (r: LoadResult | null | undefined, who: string) => {
    const cores = (r as (LoadResult & { cpuCores?: Record<string, number> }) | null | undefined)
      ?.cpuCores?.[who];
    return r && cores !== undefined
      ? `; ${fmt((cores * 1e6) / r.okPerSec)} µs CPU/req in ${who}`
      : "";
  };
  const HUB_PROCS = ["nats-server", "ingress", "projector", "executor", "callback"];
  const PEER_PROCS = ["peer-server", "peer-worker", "redis-server"];
  /** Answers per CPU-second of all of a system's processes (its own server, store and workers). */
  const perCore = (rate: number | undefined, r: unknown, procs: readonly string[]) => {
    const cores = (r as { cpuCores?: Record<string, number> } | null | undefined)?.cpuCores;
    if (!cores || rate === undefined) return Number.NaN;
    const sum = procs.reduce((a, p) => a + (cores[p] ?? 0), 0);
    return sum > 0 ? rate / sum : Number.NaN;
  };
  const perCoreRow = (
    label: string,
    hubRate: number,
    hubR: unknown,
    peerRate: number | undefined,
    peerR: unknown,
  ) => {
    const h = perCore(hubRate, hubR, HUB_PROCS);
    const p = perCore(peerRate, peerR, PEER_PROCS);
    add(
      label,
      `${fmt(h)} vs ${fmt(p)}`,
      `per CPU-second: hub (nats+4 services) vs peer (fastify+worker+redis); ratio ${fmt(h / p, 2)}`,
      "",
    );
  };
  const lat = (r: LoadResult | null | undefined) =>
    r ? `${fmt(r.latencyMs.p50, 1)} / ${fmt(r.latencyMs.p99, 1)} / ${fmt(r.latencyMs.max)}` : "–";
  const errs = (r: LoadResult | null | undefined) =>
    r ? fmt(r.non2xx + r.errors + r.timeouts) : "–";
  if (s.ingress) {
    const i = s.ingress as {
      ceiling: LoadResult;
      ceilingAgain: LoadResult;
      ceilingMeanPerSec: number;
      hub: LoadResult;
      peer: LoadResult | null;
      ratioToCeiling: number;
      ratioToPeer: number | null;
    };
    add(
      "1 ingress POST /run (unique)",
      `${fmt(i.hub.okPerSec)}/s`,
      `${lat(i.hub)}${cpuPer(i.hub, "ingress")}`,
      errs(i.hub),
    );
    add(
      "2 ceiling (bare publish), run 1",
      `${fmt(i.ceiling.okPerSec)}/s`,
      `${lat(i.ceiling)}${cpuPer(i.ceiling, "ceiling")}`,
      errs(i.ceiling),
    );
    add(
      "2 ceiling, run 2 (after hub+peer)",
      `${fmt(i.ceilingAgain.okPerSec)}/s`,
      `${lat(i.ceilingAgain)}${cpuPer(i.ceilingAgain, "ceiling")}`,
      errs(i.ceilingAgain),
    );
    const others = (r: LoadResult | null | undefined) =>
      fmt(
        (r as (LoadResult & { cpuCores?: Record<string, number> }) | null | undefined)?.cpuCores?.[
          "(others)"
        ],
        2,
      );
    add(
      "  busy cores not ours (shared box)",
      `${others(i.ceiling)} / ${others(i.hub)} / ${others(i.ceilingAgain)}`,
      `during ceiling 1 / ingress / ceiling 2; peer ${others(i.peer)}`,
      "",
    );
    add(
      "  ingress ÷ ceiling (mean)",
      fmt(i.ratioToCeiling, 2),
      `target ≥ 0.80 (ceiling mean ${fmt(i.ceilingMeanPerSec)}/s)`,
      "",
    );
    if (i.peer) {
      add(
        "8 peer POST /run",
        `${fmt(i.peer.okPerSec)}/s`,
        `${lat(i.peer)}${cpuPer(i.peer, "peer-server")}`,
        errs(i.peer),
      );
      add("  ingress ÷ peer", fmt(i.ratioToPeer, 2), "target ≥ 1.50", "");
      perCoreRow("  POST per core", i.hub.okPerSec, i.hub, i.peer.okPerSec, i.peer);
    }
  }
  if (s.replay) {
    const r = (s.replay as { hub: LoadResult }).hub;
    add(
      "4 replay (same request_id)",
      `${fmt(r.okPerSec)}/s`,
      `${lat(r)}${cpuPer(r, "ingress")}`,
      errs(r),
    );
  }
  if (s.get) {
    const g = s.get as { hub: LoadResult; peer: LoadResult | null; ratioToPeer: number | null };
    add(
      "5 GET /jobs/{id}",
      `${fmt(g.hub.okPerSec)}/s`,
      `${lat(g.hub)}${cpuPer(g.hub, "ingress")}`,
      errs(g.hub),
    );
    if (g.peer) {
      add(
        "8 peer GET /jobs/:id",
        `${fmt(g.peer.okPerSec)}/s`,
        `${lat(g.peer)}${cpuPer(g.peer, "peer-server")}`,
        errs(g.peer),
      );
      add("  GET ÷ peer", fmt(g.ratioToPeer, 2), "target ≥ 1.50", "");
      perCoreRow("  GET per core", g.hub.okPerSec, g.hub, g.peer.okPerSec, g.peer);
    }
  }
  if (s.e2e) {
    type R = E2eResult & { projectorLagPeak: number | null };
    const e = s.e2e as {
      hub: { closed: R; rate: R };
      peer: { closed: R; rate: R } | null;
      ratioToPeer: number | null;
    };
    const l = (x: { p50: number; p99: number } | null) =>
      x ? `${fmt(x.p50, 1)} / ${fmt(x.p99, 1)}` : "–";
    const e2eRow = (label: string, r: R) =>
      add(
        label,
        `${fmt(r.completedPerSec)} done/s`,
        `GET ${l(r.toDoneMs)}; cb ${l(r.toCallbackMs)}${r.projectorLagPeak !== null ? `; lag ${fmt(r.projectorLagPeak)}` : ""}; others ${fmt((r as { cpuCores?: Record<string, number> }).cpuCores?.["(others)"], 2)} cores`,
        fmt(r.submitErrors + (r.accepted - r.completed)),
      );
    e2eRow(`3 e2e hub ${E2E_JOBS} jobs`, e.hub.closed);
    e2eRow(`3 e2e hub @${RATE}/s`, e.hub.rate);
    if (e.peer) {
      e2eRow(`8 e2e peer ${E2E_JOBS} jobs`, e.peer.closed);
      e2eRow(`8 e2e peer @${RATE}/s`, e.peer.rate);
      add("  e2e ÷ peer", fmt(e.ratioToPeer, 2), "target ≥ 1.00", "");
      perCoreRow(
        "  e2e per core",
        e.hub.closed.completedPerSec,
        e.hub.closed,
        e.peer.closed.completedPerSec,
        e.peer.closed,
      );
    }
  }
  if (s.compiler) {
    type Run = import("./compiler.ts").Measured;
    for (const r of (s.compiler as { runs: Run[] }).runs) {
      add(
        `7 compile ${r.input} (${r.tool})`,
        r.finished ? `${fmt(r.seconds, 1)} s` : "did not finish",
        `RSS ${fmt(r.peakRssMb)} MB; out ${fmt(r.outputBytes / 1e6, 1)} MB; ${r.tools} tools; largest ${fmt((r.largestTool?.bytes ?? 0) / 1e3, 1)} kB`,
        r.note ?? "",
      );
    }
  }
  for (const [name, m] of Object.entries(results.memoryMb)) {
    add(
      `6 RSS ${name} (MB)`,
      `${fmt(m.idle)} idle`,
      `${fmt(m.peak)} peak; ${fmt(m.after)} after`,
      "",
    );
  }
  const header = ["scenario", "rate", "latency ms p50 / p99 / max (or figures)", "errors"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  const out = [
    "",
    `machine: ${results.machine.cores} cores, ${results.machine.memoryGb} GB; Bun ${results.versions.bun}, nats-server ${results.versions.nats}, hub ${results.versions.hub}`,
    line(header),
    `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`,
    ...rows.map(line),
    ...results.notes.map((n) => `note: ${n}`),
    "",
  ];
  return out.join("\n");
}

try {
  await main();
} catch (err) {
  process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
} finally {
  if (sampler) clearInterval(sampler);
  await cleanupAll();
}
process.exit(process.exitCode ?? 0);
