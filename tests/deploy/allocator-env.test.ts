/**
 * The allocator settings the benchmark measures the hub with (bench/lib/allocator-env.ts) are the
 * ones the image and the systemd unit set, and the pinned Bun takes them: mimalloc reports each
 * of its options as set, and JavaScriptCore starts no JSCWarmUp thread. An unknown BUN_JSC_ option stops
 * Bun at start-up, so a Bun upgrade that drops it fails here, not in production.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { ALLOCATOR_ENV } from "../../bench/lib/allocator-env.ts";
import { runToEnd } from "../helpers/run.ts";

const DEPLOY = join(import.meta.dir, "../../deploy");

/** KEY=value pairs of the Dockerfile's last stage's ENV instructions. */
async function imageEnv(): Promise<Record<string, string>> {
  const text = (await Bun.file(join(DEPLOY, "Dockerfile")).text())
    .split("\n")
    .filter((l) => !/^\s*#/.test(l))
    .join("\n")
    .replace(/\\\n/g, " ");
  const lines = text.split("\n").map((l) => l.trim());
  const lastFrom = lines.findLastIndex((l) => /^FROM\s/i.test(l));
  const pairs = lines
    .slice(lastFrom)
    .filter((l) => /^ENV\s/i.test(l))
    .flatMap((l) => l.replace(/^ENV\s+/i, "").split(/\s+/));
  return Object.fromEntries(
    pairs.map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]),
  );
}

/** KEY=value pairs of the hub unit's Environment= lines. */
async function unitEnv(): Promise<Record<string, string>> {
  const text = await Bun.file(join(DEPLOY, "systemd/switchyard.service")).text();
  const pairs = [...text.matchAll(/^Environment=(\w+)=(.*)$/gm)];
  return Object.fromEntries(pairs.map((m) => [m[1] as string, m[2] as string]));
}

/**
 * Allocates a few hundred heap blocks, then prints the names of the process's threads once the
 * pre-faulting thread is among them or 2 s have passed (a loaded machine may start it late).
 */
const ALLOCATE_AND_LIST_THREADS = `
const { readdirSync, readFileSync } = require("node:fs");
const threads = () => readdirSync("/proc/self/task").map((t) => readFileSync("/proc/self/task/" + t + "/comm", "utf8").trim());
const keep = [];
for (let r = 0; r < 20; r++) {
  const a = [];
  for (let i = 0; i < 200000; i++) a.push({ i, s: "x" + i });
  keep.push(a);
  if (keep.length > 3) keep.shift();
}
for (let waited = 0; waited < 2000 && !threads().includes("JSCWarmUp"); waited += 50) await Bun.sleep(50);
console.log(JSON.stringify(threads()));
`;

async function bunThreads(env: Record<string, string>) {
  const { stdout, stderr, code } = await runToEnd(
    [process.execPath, "-e", ALLOCATE_AND_LIST_THREADS],
    {
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
    },
  );
  return { code, stderr, threads: JSON.parse(stdout.trim() || "[]") as string[] };
}

describe("the allocator settings", () => {
  test("are the image's and the systemd unit's", async () => {
    const image = await imageEnv();
    const unit = await unitEnv();
    for (const [key, value] of Object.entries(ALLOCATOR_ENV)) {
      expect({ key, image: image[key], unit: unit[key] }).toEqual({
        key,
        image: value,
        unit: value,
      });
    }
  });

  test("the pinned Bun takes them: mimalloc's options, no JSCWarmUp thread", async () => {
    const tuned = await bunThreads({ ...ALLOCATOR_ENV, MIMALLOC_VERBOSE: "1" });
    expect(tuned.code).toBe(0);
    expect(tuned.stderr).not.toContain("invalid JSC environment variable");
    // mimalloc reports each option as it took it: MIMALLOC_PURGE_HOLES is `option 'purge_holes'`.
    for (const [key, value] of Object.entries(ALLOCATOR_ENV)) {
      if (!key.startsWith("MIMALLOC_")) continue;
      const option = key.slice("MIMALLOC_".length).toLowerCase();
      expect(tuned.stderr).toMatch(new RegExp(`option '${option}': ${value}\\b`));
    }
    expect(tuned.threads).toContain("mi-scavenger");
    expect(tuned.threads).not.toContain("JSCWarmUp");
    // Without them the same allocations start the pre-faulting thread: the check above can fail.
    const plain = await bunThreads({});
    expect(plain.code).toBe(0);
    expect(plain.threads).toContain("JSCWarmUp");
  });
});
