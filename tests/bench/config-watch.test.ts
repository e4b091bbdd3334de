/**
 * bench/config-watch.ts: it measures every way of watching, prints one line each, leaves nothing
 * behind, and refuses a bad setting by naming its key.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SCRIPT = join(import.meta.dir, "..", "..", "bench", "config-watch.ts");

const leftDirs = () =>
  readdirSync(tmpdir()).filter((name) => name.startsWith("switchyard-config-watch-bench-"));

function run(env: Record<string, string>) {
  return Bun.spawnSync([process.execPath, SCRIPT], {
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
}

describe("bench/config-watch.ts", () => {
  test("prints the busy cores of each way of watching, and removes its directory", () => {
    const before = leftDirs();
    const out = run({ CONFIG_WATCH_PROCS: "1", CONFIG_WATCH_SEC: "1" });
    expect(out.exitCode).toBe(0);
    const lines = out.stdout.toString().trim().split("\n");
    expect(lines.map((l) => l.split(":")[0])).toEqual([
      "hub",
      "stat poll",
      "directory watch",
      "none",
    ]);
    for (const line of lines) {
      expect(line).toMatch(
        /: \d+\.\d{5} cores per process \(\d+(\.\d+)? CPU-s, 1 processes, 1 s, 200 writes\/s beside the file\)$/,
      );
    }
    expect(leftDirs()).toEqual(before);
  }, 30_000);

  test("a setting that is not a whole number of at least 1 is refused with its key", () => {
    const out = run({ CONFIG_WATCH_SEC: "0.5" });
    expect(out.exitCode).toBe(2);
    expect(out.stderr.toString()).toContain(
      "CONFIG_WATCH_SEC must be a whole number of at least 1; got '0.5'",
    );
  });
});
