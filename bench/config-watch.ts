#!/usr/bin/env bun
/**
 * What watching the config file costs an idle process: `bun bench/config-watch.ts`.
 *
 * Starts CONFIG_WATCH_PROCS idle Bun processes for each way of watching a config file in a temporary
 * directory, all at once so the machine's noise weighs on each alike, and reads their CPU time
 * (/proc, user + system, in 10-ms ticks) over CONFIG_WATCH_SEC seconds, while this process writes
 * another file of that directory CONFIG_WATCH_NEIGHBOR_WRITES times a second (the search index's
 * SQLite files sit beside the config in some layouts, the bench's own among them):
 *
 * - `hub`: the services' watch (services/cli/config-watch.ts: each file watched with inotify, and
 *   the 60-s backstop);
 * - `stat poll`: node:fs watchFile every 2 s, the other way to follow Kubernetes' symlink swaps;
 * - `directory watch`: the file's directory watched with inotify, its stat compared at each event
 *   (what a directory watch costs where other files of the directory are written);
 * - `none`: no watch, the process's own floor.
 *
 * Prints one line per way: busy cores per process and the CPU seconds counted.
 *
 * The processes end with this one (their stdin closes), also when it is killed.
 *
 * Env: CONFIG_WATCH_PROCS (per way, default 4), CONFIG_WATCH_SEC (default 90),
 * CONFIG_WATCH_NEIGHBOR_WRITES (per second, default 200; 0: none).
 */
import {
  appendFileSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  watch,
  watchFile,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { stampFiles, watchConfig } from "../services/cli/config-watch.ts";
import { parseConfig } from "../shared/config/index.ts";
import { createLogger } from "../shared/log/index.ts";
import { cpuSec, round, wholeNumberSetting } from "./lib/common.ts";

const WAYS = ["hub", "stat poll", "directory watch", "none"] as const;
type Way = (typeof WAYS)[number];

/** A child: watches `path` the given way and idles until the parent ends. */
function child(way: Way, path: string): void {
  if (way === "hub") {
    watchConfig(
      {
        path,
        load: async () => parseConfig(readFileSync(path, "utf8"), {}),
        apply: async () => undefined,
        logger: createLogger({ level: "silent", service: "bench" }),
      },
      stampFiles([path]),
    );
  } else if (way === "stat poll") {
    watchFile(path, { interval: 2_000, persistent: false }, () => undefined);
  } else if (way === "directory watch") {
    watch(dirname(path), { persistent: false }, () => statSync(path));
  }
  // Idle until the parent ends: its end closes stdin, even when it is killed.
  process.stdin.on("end", () => process.exit(0));
  process.stdin.resume();
}

async function main(): Promise<void> {
  const procs = wholeNumberSetting("CONFIG_WATCH_PROCS", 4, 1);
  const seconds = wholeNumberSetting("CONFIG_WATCH_SEC", 90, 1);
  const neighborWrites = wholeNumberSetting("CONFIG_WATCH_NEIGHBOR_WRITES", 200, 0);
  const dir = mkdtempSync(join(tmpdir(), "switchyard-config-watch-bench-"));
  const path = join(dir, "switchyard.yaml");
  writeFileSync(path, "routes:\n  - key: a.echo\n    executor: { kind: builtin, name: echo }\n");
  const children = WAYS.flatMap((way) =>
    Array.from({ length: procs }, () => ({
      way,
      proc: Bun.spawn([process.execPath, import.meta.path, "child", way, path], {
        stdio: ["pipe", "ignore", "inherit"],
      }),
    })),
  );
  const neighbor = join(dir, "index.sqlite-wal");
  const page = new Uint8Array(4_096);
  const writer =
    neighborWrites > 0
      ? setInterval(() => appendFileSync(neighbor, page), 1_000 / neighborWrites)
      : undefined;
  try {
    // Start-up (loading the modules) is not idling: count from a few seconds after it.
    await Bun.sleep(5_000);
    const before = children.map((c) => cpuSec(c.proc.pid));
    await Bun.sleep(seconds * 1_000);
    const after = children.map((c) => cpuSec(c.proc.pid));
    for (const way of WAYS) {
      let cpu = 0;
      children.forEach((c, i) => {
        if (c.way === way) cpu += (after[i] ?? 0) - (before[i] ?? 0);
      });
      const cores = cpu / seconds / procs;
      console.log(
        `${way}: ${cores.toFixed(5)} cores per process (${round(cpu)} CPU-s, ${procs} processes, ${seconds} s, ${neighborWrites} writes/s beside the file)`,
      );
    }
  } finally {
    clearInterval(writer);
    for (const c of children) c.proc.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "child") child(process.argv[3] as Way, process.argv[4] ?? "");
else await main();
