#!/usr/bin/env bun
/**
 * What the read models cost per job, alone: `bun bench/read-models.ts`.
 *
 * A private nats-server (random port, temporary store) with the hub's topology at P = 1. This
 * process runs the projector and the indexer, as the hub's read-models process does (one shared
 * feed, the job view in KV and the search index in SQLite). A child process publishes the common
 * path's three events of READ_MODELS_JOBS jobs (bench/lib/job-events.ts) at READ_MODELS_RATE
 * jobs/s, in 10-ms ticks shaped as the closed loop writes them: each tick the run.requested of a
 * new batch, the job.done of the batch before it and the callback.delivered of the one before
 * that. A warm-up round (not counted) lets the index join the shared feed and the JIT settle.
 *
 * Reported per round and as the median: CPU µs per job of this process (the read models; user
 * and system apart) and of nats-server (its /proc utime + stime, 10-ms ticks), from the first
 * publish until the projector's ack floor and the index's position reach the stream's last event;
 * and this process's peak RSS. The publisher's own CPU is not counted. The harness starts itself
 * again with the settings the bench gives the hub's services (serviceEnv below). Nothing else
 * runs on the cores, so a change to the view lane shows here in a minute where the e2e bench
 * needs rounds; two trees' harnesses run at the same time compare them as `bench/compare.ts`'s
 * together mode does (docs/performance.md, "The read models alone"). `bun --cpu-prof
 * bench/read-models.ts` profiles it.
 *
 * Env: READ_MODELS_JOBS (per round, default 10000), READ_MODELS_RATE (jobs/s, default 1000),
 * READ_MODELS_ROUNDS (default 5), READ_MODELS_INDEX (1: the index on, the default; 0: off),
 * READ_MODELS_BACKLOG (jobs; default 0: none): before the rounds, a child folds that many jobs
 * into the view with the index off (published at READ_MODELS_BACKLOG_RATE jobs/s, default 5000),
 * then this process starts with the index on and reports the index's catch-up (foldReport below),
 * READ_MODELS_REBUILD (with a backlog; 1: this process rebuilds the index from the whole stream,
 * as `switchyard index rebuild` does, and reports that instead of the catch-up; 2: the same
 * without a backlog collector, to compare), READ_MODELS_ALLOCATOR_ENV (0: Bun's allocator
 * defaults), READ_MODELS_LOG_LEVEL (warn).
 */
import { heapStats, memoryUsage } from "bun:jsc";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { INDEX_CONSUMER, rebuildIndex } from "../services/indexer/index.ts";
import { type RunningHub, setupTopology, startServices } from "../services/runtime/index.ts";
import { hashToken } from "../shared/auth/index.ts";
import { TOPOLOGY } from "../shared/bus/index.ts";
import { systemClock } from "../shared/clock/index.ts";
import { parseConfig } from "../shared/config/index.ts";
import { randomIds } from "../shared/ids/index.ts";
import { appendEvent, SINGLE_PARTITION_LAYOUT } from "../shared/jobs/index.ts";
import { createLogger } from "../shared/log/index.ts";
import { startNatsServer } from "../shared/nats/index.ts";
import { type IndexStore, openSqliteIndex } from "../shared/search/index.ts";
import { ALLOCATOR_ENV } from "./lib/allocator-env.ts";
import { cpuSec, round, wholeNumberSetting } from "./lib/common.ts";
import { median } from "./lib/compare.ts";
import { commonPathEvents } from "./lib/job-events.ts";

const env = process.env;

const JOBS = wholeNumberSetting("READ_MODELS_JOBS", 10_000, 100);
const RATE = wholeNumberSetting("READ_MODELS_RATE", 1_000, 100);
const ROUNDS = wholeNumberSetting("READ_MODELS_ROUNDS", 5, 1);
const INDEX = wholeNumberSetting("READ_MODELS_INDEX", 1, 0) === 1;
const BACKLOG = wholeNumberSetting("READ_MODELS_BACKLOG", 0, 0);
const BACKLOG_RATE = wholeNumberSetting("READ_MODELS_BACKLOG_RATE", 5_000, 100);
const REBUILD = wholeNumberSetting("READ_MODELS_REBUILD", 0, 0);
if (REBUILD > 2 || (REBUILD > 0 && BACKLOG === 0)) {
  process.stderr.write(
    `READ_MODELS_REBUILD must be 0, 1 or 2, and 1 or 2 only with READ_MODELS_BACKLOG; got '${env.READ_MODELS_REBUILD}' with READ_MODELS_BACKLOG '${env.READ_MODELS_BACKLOG ?? ""}'\n`,
  );
  process.exit(2);
}
const TICK_MS = 10;
/** How long the read models may take, after the last publish, to have written every event. */
const CAUGHT_UP_MS = 120_000;
const CLIENT = "bench";

/** The child's side: publishes jobs [from, from + count) at `rate` jobs/s, then exits. */
async function publish(
  natsUrl: string,
  range: { readonly from: number; readonly count: number; readonly rate: number },
): Promise<void> {
  const { from, count, rate } = range;
  const nc = await connect({ servers: natsUrl, noAsyncTraces: true });
  const deps = { js: jetstream(nc), layout: SINGLE_PARTITION_LAYOUT };
  const perTick = Math.max(1, Math.round((rate * TICK_MS) / 1000));
  const at = new Date().toISOString();
  const eventsOf = (i: number) =>
    commonPathEvents({
      jobId: `job_${String(i).padStart(22, "0")}`,
      clientId: CLIENT,
      input: `e2e ${i}`,
      at,
      idSuffix: String(i).padStart(21, "0"),
    });
  const ticks = Math.ceil(count / perTick) + 2;
  const started = performance.now();
  for (let t = 0; t < ticks; t++) {
    const appends: Promise<unknown>[] = [];
    // Stage s of the batch published s ticks ago: run.requested, job.done, callback.delivered.
    for (let stage = 0; stage < 3; stage++) {
      const batch = t - stage;
      if (batch < 0) continue;
      for (let k = batch * perTick; k < Math.min(count, (batch + 1) * perTick); k++) {
        const event = eventsOf(from + k)[stage];
        if (event) appends.push(appendEvent(deps, event));
      }
    }
    await Promise.all(appends);
    const due = started + (t + 1) * TICK_MS - performance.now();
    if (due > 0) await Bun.sleep(due);
  }
  await nc.close();
}

function hubYaml(natsUrl: string, index: { readonly path: string; readonly enabled: boolean }) {
  return `
index: { enabled: ${index.enabled}, sqlite_path: "${index.path}" }
server: { host: 127.0.0.1, port: 0 }
monitoring: { host: 127.0.0.1, port: 0 }
nats: { url: "${natsUrl}", duplicate_window: 2m, partitions: 1 }
log: { level: warn }
clients:
  - id: ${CLIENT}
    token_sha256: ["${hashToken("sy_bench_read_models_token_0000000000")}"]
    routes: ["bench.*"]
routes:
  - key: bench.echo
    executor: { kind: builtin, name: echo }
`;
}

/** What startServices needs for the read models on `natsUrl`, the index on or off. */
function serviceDeps(natsUrl: string, index: { readonly path: string; readonly enabled: boolean }) {
  return {
    config: parseConfig(hubYaml(natsUrl, index), {}, "bench/read-models.ts"),
    logger: createLogger({
      level: env.READ_MODELS_LOG_LEVEL ?? "warn",
      service: "bench",
      destination: process.stderr,
    }),
    clock: systemClock,
    ids: randomIds,
  };
}

/**
 * The child's side of a backlog: the read models with the index off fold `count` jobs published
 * at `rate`, as the e2e bench's index-off phase leaves the stream; exits once the view has them.
 */
async function foldBacklog(
  natsUrl: string,
  backlog: { readonly indexPath: string; readonly count: number; readonly rate: number },
): Promise<void> {
  const hub = await startServices(
    ["projector", "indexer"],
    serviceDeps(natsUrl, { path: backlog.indexPath, enabled: false }),
  );
  await publish(natsUrl, { from: 9_000_000, count: backlog.count, rate: backlog.rate });
  const nc = await connect({ servers: natsUrl, noAsyncTraces: true });
  const jsm = await jetstreamManager(nc);
  const stream = SINGLE_PARTITION_LAYOUT.stream(0);
  const last = (await jsm.streams.info(stream)).state.last_seq;
  const deadline = Date.now() + CAUGHT_UP_MS;
  while (
    (await jsm.consumers.info(stream, TOPOLOGY.consumers.projector)).ack_floor.stream_seq < last
  ) {
    if (Date.now() > deadline)
      throw new Error(`the view did not reach event ${last} within ${CAUGHT_UP_MS} ms`);
    await Bun.sleep(50);
  }
  await nc.close();
  await hub.stop();
}

interface RoundFigures {
  /** This process's CPU µs per job: user, system and both. */
  readonly user: number;
  readonly system: number;
  readonly readModels: number;
  readonly natsServer: number;
}

/** This process's resident set now (VmRSS), in MB. */
function rssMb(): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
  return Math.round(Number(kb) / 1024);
}

const mb = (bytes: number) => round(bytes / 2 ** 20, 1);

/**
 * Where this process's memory is, in MB: its resident set; JavaScriptCore's heap, live (heapSize)
 * and committed (heapCapacity: live objects and dead ones not collected yet); the memory outside
 * the heap that JavaScript objects own and report to it (extraMemorySize: ArrayBuffers, among them
 * every Buffer, and large strings), and the ArrayBuffers alone. The rest of the resident set is
 * native memory outside JavaScriptCore's count: Bun's and SQLite's own, and pages the allocator
 * keeps after they are freed.
 */
function memoryNow() {
  const stats = heapStats();
  return {
    rss: rssMb(),
    live: mb(stats.heapSize),
    committed: mb(stats.heapCapacity),
    external: mb(stats.extraMemorySize),
    arrayBuffers: mb(process.memoryUsage().arrayBuffers),
  };
}

const describeMemory = (m: ReturnType<typeof memoryNow>) =>
  `RSS ${m.rss} MB (JS heap ${m.live} MB live of ${m.committed} committed; ${m.external} MB outside it owned by JS objects, ${m.arrayBuffers} of them ArrayBuffers)`;

/**
 * Folds the backlog into the index (`fold`: the read models catching up, or a rebuild) and
 * reports it: its time, and this process's memory before, at the highest resident-set sample
 * (every 100 ms) and after.
 */
async function foldReport(what: string, fold: () => Promise<void>): Promise<void> {
  Bun.gc(true);
  const before = memoryNow();
  let top = before;
  const sample = () => {
    const now = memoryNow();
    if (now.rss > top.rss) top = now;
  };
  const timer = setInterval(sample, 100);
  const started = performance.now();
  await fold();
  const seconds = round((performance.now() - started) / 1000, 1);
  clearInterval(timer);
  sample();
  console.log(
    `${what} of ${BACKLOG} jobs (${BACKLOG * 3} events): ${seconds} s; before: ${describeMemory(before)}; at most: ${describeMemory(top)}; after: RSS ${rssMb()} MB; the allocator's peak commit ${mb(memoryUsage().peakCommit)} MB`,
  );
}

/** `switchyard index rebuild` in this process: the whole stream folded into an empty index. */
async function rebuildBacklog(
  nc: NatsConnection,
  options: { readonly store: IndexStore; readonly collect: boolean },
): Promise<void> {
  await rebuildIndex({
    nc,
    js: jetstream(nc),
    jsm: await jetstreamManager(nc),
    layout: SINGLE_PARTITION_LAYOUT,
    store: options.store,
    logger: createLogger({ level: "warn", service: "bench", destination: process.stderr }),
    ...(options.collect ? {} : { backlog: { roundDone() {} } }),
  });
}

async function main(): Promise<void> {
  const storeDir = mkdtempSync(join(tmpdir(), "switchyard-read-models-"));
  const server = await startNatsServer({ storeDir, env });
  const nc = await connect({ servers: server.url, noAsyncTraces: true });
  const indexPath = join(storeDir, "index.sqlite");
  const depsOf = (enabled: boolean) => serviceDeps(server.url, { path: indexPath, enabled });
  try {
    await setupTopology(depsOf(INDEX));
    const jsm = await jetstreamManager(nc);
    // A second connection to the index, as the operator API reads its position.
    const indexStore = openSqliteIndex(indexPath);
    await indexStore.migrate();
    const stream = SINGLE_PARTITION_LAYOUT.stream(0);
    const spawnPublisher = async (range: object, mode = "publish") => {
      const publisher = Bun.spawn(
        [process.execPath, import.meta.path, mode, server.url, JSON.stringify(range)],
        { stdout: "inherit", stderr: "inherit", env },
      );
      if ((await publisher.exited) !== 0) throw new Error("the publisher failed");
    };

    /**
     * Resolves once the view and (with the index on) the index have every event of the stream;
     * a read model still behind after CAUGHT_UP_MS stops the harness.
     */
    const caughtUp = async (models = { view: true, index: INDEX }) => {
      const last = (await jsm.streams.info(stream)).state.last_seq;
      for (const deadline = Date.now() + CAUGHT_UP_MS; Date.now() < deadline; ) {
        const view = models.view
          ? (await jsm.consumers.info(stream, TOPOLOGY.consumers.projector)).ack_floor.stream_seq
          : last;
        const index = models.index ? (await indexStore.position(0)).appliedSeq : last;
        if (view >= last && index >= last) return;
        await Bun.sleep(50);
      }
      throw new Error(`the read models did not reach event ${last} within ${CAUGHT_UP_MS} ms`);
    };

    /** One round of `count` jobs from job number `from`. */
    const measure = async (from: number, count: number): Promise<RoundFigures> => {
      Bun.gc(true);
      const server0 = cpuSec(server.pid) * 1e6;
      const self0 = process.cpuUsage();
      await spawnPublisher({ from, count, rate: RATE });
      await caughtUp();
      const self = process.cpuUsage(self0);
      const user = self.user / count;
      const system = self.system / count;
      const natsServer = (cpuSec(server.pid) * 1e6 - server0) / count;
      return { user, system, readModels: user + system, natsServer };
    };

    let hub: RunningHub | undefined;
    if (BACKLOG > 0) {
      await spawnPublisher({ indexPath, count: BACKLOG, rate: BACKLOG_RATE }, "backlog");
      // As the e2e bench turns the index on again: no durable of its own left from before.
      await jsm.consumers.delete(stream, INDEX_CONSUMER).catch(() => undefined);
      if (REBUILD > 0) {
        await foldReport(REBUILD === 1 ? "index rebuild" : "index rebuild, no collector", () =>
          rebuildBacklog(nc, { store: indexStore, collect: REBUILD === 1 }),
        );
        hub = await startServices(["projector", "indexer"], depsOf(true));
      } else {
        await foldReport("catch-up", async () => {
          hub = await startServices(["projector", "indexer"], depsOf(true));
          await caughtUp({ view: false, index: true });
        });
      }
    } else {
      hub = await startServices(["projector", "indexer"], depsOf(INDEX));
    }
    await measure(0, JOBS);
    const rounds: RoundFigures[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const figures = await measure(1_000_000 * (r + 1), JOBS);
      rounds.push(figures);
      console.log(
        `round ${r + 1}: read models ${round(figures.readModels, 1)} µs/job (user ${round(figures.user, 1)}, system ${round(figures.system, 1)}), nats-server ${round(figures.natsServer, 1)}`,
      );
    }
    const peakKb = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    const mid = (pick: (f: RoundFigures) => number) => round(median(rounds.map(pick)), 1);
    console.log(
      `read models (index ${INDEX ? "on" : "off"}, ${JOBS} jobs at ${RATE}/s, median of ${ROUNDS}): ${mid((f) => f.readModels)} µs/job (user ${mid((f) => f.user)}, system ${mid((f) => f.system)}); nats-server ${mid((f) => f.natsServer)}; peak RSS ${Math.round(Number(peakKb) / 1024)} MB`,
    );
    await indexStore.close();
    await hub?.stop();
  } finally {
    await nc.close();
    await server.stop();
    rmSync(storeDir, { recursive: true, force: true });
  }
}

/**
 * The settings the bench runs the hub's services with (bench/run.ts): the image's allocator
 * settings, a 512-MiB JavaScriptCore heap and NODE_ENV=production. They act at start-up, so the
 * harness starts itself again with them. A setting in the environment wins (to try another
 * value); READ_MODELS_ALLOCATOR_ENV=0 leaves out the allocator's.
 */
function serviceEnv(): Record<string, string | undefined> {
  return {
    ...(env.READ_MODELS_ALLOCATOR_ENV === "0" ? {} : ALLOCATOR_ENV),
    NODE_ENV: "production",
    BUN_JSC_forceRAMSize: String(512 * 1024 * 1024),
    ...env,
    READ_MODELS_SERVICE_ENV: "1",
  };
}

if (process.argv[2] === "publish") {
  await publish(process.argv[3] ?? "", JSON.parse(process.argv[4] ?? "{}"));
} else if (process.argv[2] === "backlog") {
  await foldBacklog(process.argv[3] ?? "", JSON.parse(process.argv[4] ?? "{}"));
} else if (env.READ_MODELS_SERVICE_ENV === "1") {
  await main();
} else {
  const child = Bun.spawn([process.execPath, ...process.execArgv, import.meta.path], {
    stdio: ["inherit", "inherit", "inherit"],
    env: serviceEnv(),
  });
  process.exit(await child.exited);
}
