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
 * READ_MODELS_ALLOCATOR_ENV (0: Bun's allocator defaults), READ_MODELS_LOG_LEVEL (warn).
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { setupTopology, startServices } from "../services/runtime/index.ts";
import { hashToken } from "../shared/auth/index.ts";
import { TOPOLOGY } from "../shared/bus/index.ts";
import { systemClock } from "../shared/clock/index.ts";
import { parseConfig } from "../shared/config/index.ts";
import { randomIds } from "../shared/ids/index.ts";
import { appendEvent, SINGLE_PARTITION_LAYOUT } from "../shared/jobs/index.ts";
import { createLogger } from "../shared/log/index.ts";
import { startNatsServer } from "../shared/nats/index.ts";
import { openSqliteIndex } from "../shared/search/index.ts";
import { ALLOCATOR_ENV } from "./lib/allocator-env.ts";
import { cpuSec, round } from "./lib/common.ts";
import { median } from "./lib/compare.ts";
import { commonPathEvents } from "./lib/job-events.ts";

const env = process.env;

/** A whole number of at least `min` from the environment, or an exit naming the key. */
function setting(key: string, fallback: number, min: number): number {
  const value = Number(env[key] ?? fallback);
  if (Number.isInteger(value) && value >= min) return value;
  process.stderr.write(`${key} must be a whole number of at least ${min}; got '${env[key]}'\n`);
  process.exit(2);
}

const JOBS = setting("READ_MODELS_JOBS", 10_000, 100);
const RATE = setting("READ_MODELS_RATE", 1_000, 100);
const ROUNDS = setting("READ_MODELS_ROUNDS", 5, 1);
const INDEX = setting("READ_MODELS_INDEX", 1, 0) === 1;
const TICK_MS = 10;
/** How long the read models may take, after the last publish, to have written every event. */
const CAUGHT_UP_MS = 120_000;
const CLIENT = "bench";

/** The child's side: publishes jobs [from, from + count) at `rate` jobs/s, then exits. */
async function publish(natsUrl: string, from: number, count: number): Promise<void> {
  const nc = await connect({ servers: natsUrl, noAsyncTraces: true });
  const deps = { js: jetstream(nc), layout: SINGLE_PARTITION_LAYOUT };
  const perTick = Math.max(1, Math.round((RATE * TICK_MS) / 1000));
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

function hubYaml(natsUrl: string, indexPath: string): string {
  return `
index: { enabled: ${INDEX}, sqlite_path: "${indexPath}" }
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

interface RoundFigures {
  /** This process's CPU µs per job: user, system and both. */
  readonly user: number;
  readonly system: number;
  readonly readModels: number;
  readonly natsServer: number;
}

async function main(): Promise<void> {
  const storeDir = mkdtempSync(join(tmpdir(), "switchyard-read-models-"));
  const server = await startNatsServer({ storeDir, env });
  const nc = await connect({ servers: server.url, noAsyncTraces: true });
  const logger = createLogger({
    level: env.READ_MODELS_LOG_LEVEL ?? "warn",
    service: "bench",
    destination: process.stderr,
  });
  const indexPath = join(storeDir, "index.sqlite");
  const config = parseConfig(hubYaml(server.url, indexPath), {}, "bench/read-models.ts");
  const deps = { config, logger, clock: systemClock, ids: randomIds };
  try {
    await setupTopology(deps);
    const hub = await startServices(["projector", "indexer"], deps);
    const jsm = await jetstreamManager(nc);
    // A second connection to the index, as the operator API reads its position.
    const indexStore = openSqliteIndex(indexPath);
    const stream = SINGLE_PARTITION_LAYOUT.stream(0);

    /**
     * Resolves once the view and (with the index on) the index have every event of the stream;
     * a read model still behind after CAUGHT_UP_MS stops the harness.
     */
    const caughtUp = async () => {
      const last = (await jsm.streams.info(stream)).state.last_seq;
      for (const deadline = Date.now() + CAUGHT_UP_MS; Date.now() < deadline; ) {
        const view = await jsm.consumers.info(stream, TOPOLOGY.consumers.projector);
        const index = INDEX ? (await indexStore.position(0)).appliedSeq : last;
        if (view.ack_floor.stream_seq >= last && index >= last) return;
        await Bun.sleep(50);
      }
      throw new Error(`the read models did not reach event ${last} within ${CAUGHT_UP_MS} ms`);
    };

    /** One round of `count` jobs from job number `from`. */
    const measure = async (from: number, count: number): Promise<RoundFigures> => {
      Bun.gc(true);
      const server0 = cpuSec(server.pid) * 1e6;
      const self0 = process.cpuUsage();
      const publisher = Bun.spawn(
        [process.execPath, import.meta.path, "publish", server.url, `${from}`, `${count}`],
        { stdout: "inherit", stderr: "inherit", env },
      );
      if ((await publisher.exited) !== 0) throw new Error("the publisher failed");
      await caughtUp();
      const self = process.cpuUsage(self0);
      const user = self.user / count;
      const system = self.system / count;
      const natsServer = (cpuSec(server.pid) * 1e6 - server0) / count;
      return { user, system, readModels: user + system, natsServer };
    };

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
    await hub.stop();
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
  await publish(process.argv[3] ?? "", Number(process.argv[4]), Number(process.argv[5]));
} else if (env.READ_MODELS_SERVICE_ENV === "1") {
  await main();
} else {
  const child = Bun.spawn([process.execPath, ...process.execArgv, import.meta.path], {
    stdio: ["inherit", "inherit", "inherit"],
    env: serviceEnv(),
  });
  process.exit(await child.exited);
}
