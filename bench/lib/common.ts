/**
 * Helpers shared by the benchmark processes: child processes that are always cleaned up, RSS
 * sampling from /proc, free loopback ports, percentiles, small HTTP waits and settings read from
 * the environment.
 */
import { readdirSync, readFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";

export const LOOPBACK = "127.0.0.1";

/** Repository root (bench/lib/../..). */
export const ROOT = new URL("../../", import.meta.url).pathname;

/** A free TCP port on 127.0.0.1 (bound and released; good enough for a benchmark). */
export function freePort(): number {
  const server = Bun.listen({
    hostname: LOOPBACK,
    port: 0,
    socket: { data() {} },
  });
  const port = server.port;
  server.stop(true);
  return port;
}

/** VmRSS of a process in MB, or NaN when it is gone. */
export function rssMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = /VmRSS:\s+(\d+)\s+kB/.exec(status);
    return match?.[1] ? Number(match[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/**
 * A whole number of at least `least` from the environment (`fallback` when unset), or an exit
 * with status 2 and a message naming the key.
 */
export function wholeNumberSetting(key: string, fallback: number, least: number): number {
  const value = Number(process.env[key] ?? fallback);
  if (Number.isInteger(value) && value >= least) return value;
  process.stderr.write(
    `${key} must be a whole number of at least ${least}; got '${process.env[key]}'\n`,
  );
  process.exit(2);
}

/** CPU time (user + system) a process has used so far, in seconds; NaN when it is gone. */
export function cpuSec(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may contain spaces): utime is 14th, stime 15th overall.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
  } catch {
    return Number.NaN;
  }
}

/**
 * CPU seconds (user + system) of a process so far per thread name (its tasks' `comm` in /proc):
 * the JavaScript thread (`bun.exe`), JavaScriptCore's compiler (`JITWorker`) and GC helpers
 * (`HeapHelper`), Bun's fetch (`HTTP Client`). Threads that ended are not counted.
 */
export function threadCpuSec(pid: number): Map<string, number> {
  const byName = new Map<string, number>();
  let tasks: string[] = [];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return byName;
  }
  for (const task of tasks) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${task}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const name = readFileSync(`/proc/${pid}/task/${task}/comm`, "utf8").trim();
      const sec = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
      byName.set(name, (byName.get(name) ?? 0) + sec);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return byName;
}

/** Busy CPU seconds of the whole machine so far (all cores; /proc/stat minus idle and iowait). */
export function machineBusySec(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  return (total - (v[3] ?? 0) - (v[4] ?? 0)) / CLOCK_TICKS;
}

/** USER_HZ; 100 on every Linux this runs on. */
const CLOCK_TICKS = 100;

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] ?? Number.NaN;
}

export interface LatencySummary {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export function summarize(values: readonly number[]): LatencySummary {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50: round(percentile(sorted, 50)),
    p99: round(percentile(sorted, 99)),
    max: round(sorted[sorted.length - 1] ?? Number.NaN),
  };
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

export interface Child {
  readonly name: string;
  readonly pid: number;
  readonly proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  /** The last 64 KB of stdout and stderr. */
  output(): string;
  /** Resolves with the first stdout line matching `pattern`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  stop(signal?: "SIGTERM" | "SIGINT" | "SIGKILL"): Promise<void>;
}

const children = new Set<Child>();
const tempDirs = new Set<string>();
const cleanups: (() => Promise<void>)[] = [];

/**
 * `bun --cpu-prof` arguments that write `<name>-<time>.cpuprofile` (and Bun's markdown summary)
 * to bench/results/profiles when the process exits: BENCH_PROFILE's hub services and floors.
 */
export function cpuProfileArgs(name: string): string[] {
  return [
    "--cpu-prof",
    "--cpu-prof-md",
    `--cpu-prof-dir=${join(ROOT, "bench/results/profiles")}`,
    `--cpu-prof-name=${name}-${Date.now()}`,
  ];
}

/**
 * BENCH_NATS_PROFILE=1: nats-server's own Go profiler on a free loopback port (`--profile`), for
 * the hub's and each floor's server. Its address serves `/debug/pprof/profile?seconds=N` (CPU) and
 * `/debug/pprof/heap?debug=1` (allocations by site, and Go's memory statistics: TotalAlloc,
 * Mallocs, NumGC), which `perf` cannot give for Debian's stripped binary. Empty when unset.
 */
export function natsProfileArgs(): { readonly args: string[]; readonly url?: string } {
  if (process.env.BENCH_NATS_PROFILE !== "1") return { args: [] };
  const port = freePort();
  return { args: ["--profile", String(port)], url: `http://${LOOPBACK}:${port}/debug/pprof` };
}

/** Spawns a child process whose output is captured; every child is stopped on exit and SIGINT. */
export function spawnChild(
  name: string,
  cmd: readonly string[],
  env: Record<string, string | undefined> = {},
): Child {
  const proc = Bun.spawn([...cmd], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let log = "";
  const waiters: { pattern: RegExp; resolve: (m: RegExpExecArray) => void }[] = [];
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      log += decoder.decode(chunk, { stream: true });
      // Trim at a line start, never inside the last line: a RESULT line can be longer than the
      // window (e2e stamps of a large run), and its matcher needs the whole line.
      if (log.length > 128_000) {
        const cut = log.lastIndexOf("\n", log.length - 64_000);
        if (cut > 0) log = log.slice(cut + 1);
      }
      for (const w of [...waiters]) {
        const m = w.pattern.exec(log);
        if (m) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(m);
        }
      }
    }
  };
  void pump(proc.stdout);
  void pump(proc.stderr);
  const child: Child = {
    name,
    pid: proc.pid,
    proc,
    output: () => log,
    waitForLine(pattern, timeoutMs = 30_000) {
      const m = pattern.exec(log);
      if (m) return Promise.resolve(m);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${name}: no line ${pattern} within ${timeoutMs} ms:\n${log}`)),
          timeoutMs,
        );
        waiters.push({
          pattern,
          resolve: (found) => {
            clearTimeout(timer);
            resolve(found);
          },
        });
        void proc.exited.then((code) => {
          clearTimeout(timer);
          reject(new Error(`${name} exited with ${code}:\n${log}`));
        });
      });
    },
    async stop(signal = "SIGTERM") {
      children.delete(child);
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill(signal);
      const timer = setTimeout(() => proc.kill("SIGKILL"), 8_000);
      await proc.exited;
      clearTimeout(timer);
    },
  };
  children.add(child);
  return child;
}

export function registerTempDir(dir: string): void {
  tempDirs.add(dir);
}

export function registerCleanup(fn: () => Promise<void>): void {
  cleanups.push(fn);
}

let cleaning: Promise<void> | undefined;

/** Stops every child (SIGTERM, then SIGKILL), runs the cleanups and removes the temp dirs. */
export function cleanupAll(): Promise<void> {
  cleaning ??= (async () => {
    for (const fn of cleanups.reverse()) await fn().catch(() => {});
    await Promise.all([...children].map((c) => c.stop().catch(() => {})));
    for (const dir of tempDirs) await rm(dir, { recursive: true, force: true }).catch(() => {});
  })();
  return cleaning;
}

let handlersInstalled = false;

/** On SIGINT/SIGTERM: clean up and exit 130; also kills children if the process exits early. */
export function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  const onSignal = (signal: string) => {
    process.stderr.write(`\nbench: ${signal}, cleaning up\n`);
    void cleanupAll().finally(() => process.exit(130));
  };
  process.on("SIGINT", () => onSignal("SIGINT"));
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("exit", () => {
    for (const c of children) {
      if (c.proc.exitCode === null) c.proc.kill("SIGKILL");
    }
  });
}

/** Polls `url` until it answers 2xx. */
export async function waitHttp(url: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      if (res.ok) return;
      last = `HTTP ${res.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await Bun.sleep(100);
  }
  throw new Error(`${url} not ready within ${timeoutMs} ms (${last})`);
}

/**
 * Writes `<prefix> <json>` as one line and resolves once stdout has taken all of it. A child that
 * calls process.exit() right after a plain write loses whatever its pipe had not taken: past 64 KB
 * with a busy reader (the RESULT of a 50,000-job e2e loop, its 5,000 stamps).
 */
export function writeResultLine(prefix: string, value: unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(`${prefix} ${JSON.stringify(value)}\n`, (err) =>
      err ? reject(err) : resolve(),
    );
  });
}

/** Reads one JSON line printed by a child process with the given prefix. */
export async function readResultLine<T>(
  child: Child,
  prefix: string,
  timeoutMs: number,
): Promise<T> {
  // Up to its newline: a long line arrives in several chunks, and `$` would match the first.
  const match = await child.waitForLine(new RegExp(`^${prefix} (.*)\n`, "m"), timeoutMs);
  return JSON.parse(match[1] ?? "null") as T;
}
