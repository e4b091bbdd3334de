#!/usr/bin/env bun
/**
 * The callback service's CPU per delivered callback, alone: `bun bench/callback-cpu.ts`.
 *
 * Each run starts a fresh nats-server, the signature-checking receiver (bench/receiver.ts) and
 * `switchyard serve callback` of one checkout (production, log level warn, as in `npm run bench`),
 * then stores CB_JOBS final job events whose run summary names the receiver, at most CB_IN_FLIGHT
 * jobs ahead of the callbacks (a closed loop, as the e2e scenario), and reads the service's CPU
 * time (/proc, user + system) from before the first event to the last verified callback.
 *
 * CB_ROOTS: comma list of checkouts to compare (default this one); the runs alternate between them
 * for CB_ROUNDS rounds (order flipped every round), so a busy shared machine weighs on each alike.
 * Prints one line per run and, per checkout, the median µs per callback with the spread.
 *
 * Each run's line also gives the µs per callback of each kind of thread (`threads`: the
 * JavaScript thread `bun.exe`, the compiler's `JITWorker`, the GC's `HeapHelper`, …).
 *
 * Env: CB_JOBS (default 4000), CB_ROUNDS (default 3), CB_IN_FLIGHT (default 64), CB_ROOTS,
 * CB_PROFILE=1 (the service under --cpu-prof, written to bench/results/profiles; summarise with
 * `bun bench/profile.ts <file>`).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashToken } from "../shared/auth/index.ts";
import { TOPOLOGY } from "../shared/bus/index.ts";
import { parseConfig } from "../shared/config/index.ts";
import type { JobEvent } from "../shared/domain/index.ts";
import { connectHub } from "../shared/hub/index.ts";
import { randomIds } from "../shared/ids/index.ts";
import { appendEvent } from "../shared/jobs/index.ts";
import { createLogger } from "../shared/log/index.ts";
import { startNatsServer } from "../shared/nats/index.ts";
import { generateWebhookSecret } from "../shared/webhooks/index.ts";
import { ALLOCATOR_ENV } from "./lib/allocator-env.ts";
import {
  cleanupAll,
  cpuSec,
  freePort,
  installExitHandlers,
  LOOPBACK,
  ROOT,
  registerTempDir,
  round,
  spawnChild,
  threadCpuSec,
  waitHttp,
} from "./lib/common.ts";

const env = process.env;
const JOBS = Number(env.CB_JOBS ?? 4000);
const ROUNDS = Number(env.CB_ROUNDS ?? 3);
const IN_FLIGHT = Number(env.CB_IN_FLIGHT ?? 64);
const ROOTS = (env.CB_ROOTS ?? ROOT).split(",").filter((r) => r !== "");
const BUN = process.execPath;
const PROFILE =
  env.CB_PROFILE === "1"
    ? [
        "--cpu-prof",
        `--cpu-prof-dir=${join(ROOT, "bench/results/profiles")}`,
        `--cpu-prof-name=callback-cpu-${Date.now()}.cpuprofile`,
      ]
    : [];

function configYaml(natsUrl: string, monitoringPort: number, secret: string): string {
  return `
server: { host: ${LOOPBACK}, port: 0 }
monitoring: { host: ${LOOPBACK}, port: ${monitoringPort} }
nats: { url: "${natsUrl}", duplicate_window: 2m }
log: { level: warn }
index: { enabled: false }
callbacks: { allow_cidrs: ["127.0.0.0/8"], concurrency: 256, per_destination_concurrency: 256 }
clients:
  - id: bench
    token_sha256: ["${hashToken("bench-token-0123456789abcdef")}"]
    routes: ["bench.*"]
    runs_per_minute: 1000000000
    callback_secrets: ["${secret}"]
    callback_retry_schedule: [100ms]
routes:
  - key: bench.echo
    executor: { kind: builtin, name: echo }
`;
}

async function receivedCount(base: string): Promise<number> {
  const res = await fetch(`${base}/count`);
  const body = (await res.json()) as { ok: number; bad: number };
  if (body.bad > 0) throw new Error(`the receiver refused ${body.bad} callbacks`);
  return body.ok;
}

/** One run against one checkout: µs of the callback service's CPU per verified callback. */
async function measure(root: string): Promise<number> {
  const secret = generateWebhookSecret();
  const storeDir = mkdtempSync(join(tmpdir(), "switchyard-cbcpu-nats-"));
  registerTempDir(storeDir);
  const nats = await startNatsServer({ storeDir, env: process.env });
  const receiver = spawnChild("receiver", [BUN, join(ROOT, "bench/receiver.ts")], {
    PORT: "0",
    WEBHOOK_SECRET: secret,
  });
  const port = (await receiver.waitForLine(/LISTENING (\d+)/))[1];
  const receiverBase = `http://${LOOPBACK}:${port}`;
  const configDir = mkdtempSync(join(tmpdir(), "switchyard-cbcpu-cfg-"));
  registerTempDir(configDir);
  const configPath = join(configDir, "switchyard.yaml");
  const monitoringPort = freePort();
  const yaml = configYaml(nats.url, monitoringPort, secret);
  writeFileSync(configPath, yaml);
  const config = parseConfig(yaml, {}, "callback-cpu bench");
  const hub = await connectHub(
    config,
    createLogger({ level: "warn", service: "bench" }),
    "callback-cpu-bench",
  );
  const service = spawnChild(
    "callback",
    [BUN, ...PROFILE, join(root, "services/cli/main.ts"), "serve", "callback"],
    {
      SWITCHYARD_CONFIG: configPath,
      SWITCHYARD_LOG_LEVEL: "warn",
      NODE_ENV: "production",
      NATS_URL: undefined,
      BUN_JSC_forceRAMSize: "536870912",
      ...ALLOCATOR_ENV,
    },
  );
  try {
    await waitHttp(`http://${LOOPBACK}:${monitoringPort}/readyz`);
    await Bun.sleep(1_000);
    const before = cpuSec(service.pid);
    const threadsBefore = threadCpuSec(service.pid);
    const started = performance.now();
    let stored = 0;
    const store = async () => {
      const now = new Date().toISOString();
      const event: JobEvent = {
        id: randomIds.next("evt"),
        schema_version: 1,
        type: "job.done",
        job_id: randomIds.next("job"),
        client_id: "bench",
        occurred_at: now,
        data: {
          output: { echoed: { n: stored } },
          run: {
            request_id: randomIds.next("req"),
            route: "bench.echo",
            created_at: now,
            callback_url: `${receiverBase}/cb`,
          },
        },
      };
      stored++;
      await appendEvent(hub, event, { expectedLastSubjectSeq: 0 });
    };
    let delivered = 0;
    while (delivered < JOBS) {
      const batch = Math.min(JOBS - stored, IN_FLIGHT - (stored - delivered));
      await Promise.all(Array.from({ length: Math.max(0, batch) }, store));
      await Bun.sleep(batch > 0 ? 1 : 5);
      delivered = await receivedCount(receiverBase);
      if (performance.now() - started > 300_000) throw new Error("callbacks did not arrive");
    }
    // The last records (callback.delivered) and acks settle just after the last answer.
    const consumer = TOPOLOGY.consumers.callback;
    for (let i = 0; i < 200; i++) {
      const info = await hub.jsm.consumers.info(TOPOLOGY.eventsStream, consumer);
      if (info.num_ack_pending === 0 && info.num_pending === 0) break;
      await Bun.sleep(10);
    }
    const cpu = cpuSec(service.pid) - before;
    const threads: Record<string, number> = {};
    for (const [name, sec] of threadCpuSec(service.pid)) {
      const us = ((sec - (threadsBefore.get(name) ?? 0)) / JOBS) * 1e6;
      if (us >= 1) threads[name] = round(us, 0);
    }
    const wallSec = (performance.now() - started) / 1000;
    console.log(
      JSON.stringify({
        root,
        jobs: JOBS,
        us_per_callback: round((cpu / JOBS) * 1e6, 1),
        callbacks_per_s: round(JOBS / wallSec, 0),
        threads,
      }),
    );
    return (cpu / JOBS) * 1e6;
  } finally {
    await service.stop();
    await hub.drain();
    await receiver.stop();
    await nats.stop("SIGKILL");
  }
}

installExitHandlers();
const results = new Map<string, number[]>(ROOTS.map((r) => [r, []]));
try {
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? ROOTS : [...ROOTS].reverse();
    for (const root of order) results.get(root)?.push(await measure(root));
  }
  for (const [root, values] of results) {
    const sorted = [...values].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
    console.log(
      `${root}: median ${round(median, 0)} µs per callback (${sorted.map((v) => round(v, 0)).join(", ")})`,
    );
  }
} finally {
  await cleanupAll();
}
