#!/usr/bin/env bun
/**
 * What the read models' replicas cost at rest: `bun bench/read-model-idle.ts`.
 *
 * For one replica and then for two, on a fresh nats-server each (random port, temporary store):
 * starts `switchyard serve projector indexer` processes (the Kubernetes read-models Deployment's
 * command, with the bench's JavaScriptCore and allocator settings), waits until one folds and the
 * other stands by, lets them settle, and reads their CPU time and nats-server's (/proc, user +
 * system, in 10-ms ticks) over a quiet window. Nothing is posted: what is measured is the
 * partition claims' renewals and watches, the consumers' heartbeats and each process's own floor.
 *
 * Prints one line per replica count: busy cores of the active process, the standby and
 * nats-server, and the CPU seconds counted.
 *
 * Env: READ_MODEL_IDLE_SEC (the window, default 120), READ_MODEL_IDLE_SETTLE_SEC (default 30).
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startNatsServer } from "../shared/nats/index.ts";
import { ALLOCATOR_ENV } from "./lib/allocator-env.ts";
import {
  type Child,
  cleanupAll,
  cpuSec,
  installExitHandlers,
  ROOT,
  registerTempDir,
  round,
  spawnChild,
  wholeNumberSetting,
} from "./lib/common.ts";

const CONFIG = (natsUrl: string, indexPath: string) => `
server: { host: 127.0.0.1, port: 0 }
monitoring: { host: 127.0.0.1, port: 0 }
nats: { url: "${natsUrl}" }
log: { level: info }
index: { sqlite_path: "${indexPath}" }
routes:
  - key: idle.echo
    executor: { kind: builtin, name: echo }
`;

/** One read-models process, as the Deployment runs it. */
function readModels(name: string, configPath: string): Child {
  return spawnChild(
    name,
    [process.execPath, join(ROOT, "services/cli/main.ts"), "serve", "projector", "indexer"],
    {
      SWITCHYARD_CONFIG: configPath,
      NODE_ENV: "production",
      NATS_URL: undefined,
      BUN_JSC_forceRAMSize: String(512 * 1024 * 1024),
      ...ALLOCATOR_ENV,
    },
  );
}

/** Busy cores of each process over `seconds`, and the CPU seconds behind them. */
async function window(pids: readonly number[], seconds: number) {
  const before = pids.map(cpuSec);
  await Bun.sleep(seconds * 1_000);
  return pids.map((pid, i) => {
    const cpu = cpuSec(pid) - (before[i] ?? 0);
    return { cores: cpu / seconds, cpu };
  });
}

async function measure(replicas: 1 | 2, seconds: number, settleSec: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "switchyard-read-model-idle-"));
  registerTempDir(dir);
  const nats = await startNatsServer({ storeDir: join(dir, "nats"), env: process.env });
  try {
    const configPath = join(dir, "switchyard.yaml");
    writeFileSync(configPath, CONFIG(nats.url, join(dir, "index.sqlite")));
    const active = readModels("read-models", configPath);
    await active.waitForLine(/"projector started"/);
    await active.waitForLine(/"msg":"indexer (?:started|folds the shared feed)/);
    const standby = replicas === 2 ? readModels("read-models#2", configPath) : undefined;
    await standby?.waitForLine(/"projector standing by"/);
    await Bun.sleep(settleSec * 1_000);
    const pids = [active.pid, ...(standby ? [standby.pid] : []), nats.pid];
    const [a, b, n] = await window(pids, seconds);
    const [busy, natsCores] = standby ? [b, n] : [undefined, b];
    const cores = (x: { cores: number } | undefined) => x?.cores.toFixed(4) ?? "–";
    const cpu = [a, busy, natsCores].reduce((sum, x) => sum + (x?.cpu ?? 0), 0);
    await Promise.all([active.stop(), standby?.stop()]);
    return `${replicas} replica${replicas === 2 ? "s" : ""}: active ${cores(a)} cores, standby ${cores(busy)}, nats-server ${cores(natsCores)} (${round(cpu)} CPU-s over ${seconds} s)`;
  } finally {
    await nats.stop("SIGKILL");
  }
}

installExitHandlers();
const seconds = wholeNumberSetting("READ_MODEL_IDLE_SEC", 120, 1);
const settleSec = wholeNumberSetting("READ_MODEL_IDLE_SETTLE_SEC", 30, 0);
try {
  for (const replicas of [1, 2] as const) console.log(await measure(replicas, seconds, settleSec));
} finally {
  await cleanupAll();
}
