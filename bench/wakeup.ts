#!/usr/bin/env bun
/**
 * What waking a process costs, alone: `bun bench/wakeup.ts`.
 *
 * A process that sleeps between events pays for each wake-up (the kernel's and the VM's work to
 * leave and re-enter idle, counted as the process's CPU) on top of the event's own work. This
 * measures it with nothing else: a timer that fires every WAKEUP_GAPS_MS ms and does nothing,
 * WAKEUP_COUNT times, in Bun (this process) and in Node (`node -e`, the machine's), reporting the
 * process's CPU per wake-up (user and system apart). At 500 jobs/s every message of the hub and of
 * the peers is such a wake-up in each process it passes (docs/performance.md, "What limits each
 * figure"); in the closed loop the processes rarely sleep.
 *
 * Env: WAKEUP_GAPS_MS (comma list, default "1,5,20"), WAKEUP_COUNT (default 1000),
 * WAKEUP_NODE=0 (Bun only).
 */
import { spawnSync } from "node:child_process";

const env = process.env;

/** A comma list of whole numbers of at least 1 from the environment, or an exit naming the key. */
function numbers(key: string, fallback: string): number[] {
  const raw = env[key] ?? fallback;
  const values = raw.split(",").map((s) => Number(s.trim()));
  if (values.length > 0 && values.every((n) => Number.isInteger(n) && n >= 1)) return values;
  process.stderr.write(`${key} takes a comma list of whole numbers ≥ 1; got '${raw}'\n`);
  process.exit(2);
}

const gaps = numbers("WAKEUP_GAPS_MS", "1,5,20");
const [count = 1000] = numbers("WAKEUP_COUNT", "1000");

/** The loop both runtimes run: prints "<user µs> <system µs>" per wake-up. */
const LOOP = `
const gap = Number(process.argv[1]), n = Number(process.argv[2]);
let i = 0;
const c0 = process.cpuUsage();
const tick = () => {
  if (i++ < n) return void setTimeout(tick, gap);
  const c = process.cpuUsage(c0);
  console.log((c.user / n).toFixed(1) + " " + (c.system / n).toFixed(1));
};
tick();
`;

function measure(runtime: string, gap: number): string {
  const out = spawnSync(runtime, ["-e", LOOP, String(gap), String(count)], { encoding: "utf8" });
  if (out.status !== 0) return `${runtime} failed: ${out.stderr || out.error?.message}`;
  const [user = Number.NaN, system = Number.NaN] = out.stdout.trim().split(" ").map(Number);
  return `${(user + system).toFixed(1)} µs of CPU per wake-up (user ${user}, system ${system})`;
}

const runtimes = [process.execPath, ...(env.WAKEUP_NODE === "0" ? [] : ["node"])];
for (const gap of gaps) {
  for (const runtime of runtimes) {
    const name = runtime === "node" ? "node" : "bun";
    console.log(`${name}, a timer every ${gap} ms, ${count} wake-ups: ${measure(runtime, gap)}`);
  }
}
