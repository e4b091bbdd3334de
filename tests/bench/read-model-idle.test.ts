/**
 * bench/read-model-idle.ts: it measures one replica and two (one folding, one standing by),
 * prints a line each, leaves no nats-server or directory behind, and refuses a bad setting by
 * naming its key.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SCRIPT = join(import.meta.dir, "..", "..", "bench", "read-model-idle.ts");

const leftDirs = () =>
  readdirSync(tmpdir()).filter((name) => name.startsWith("switchyard-read-model-idle-"));

/** A nats-server still running on one of the script's stores. */
const leftProcesses = () =>
  Bun.spawnSync(["pgrep", "-f", "switchyard-read-model-idle-"]).stdout.toString().trim();

function run(env: Record<string, string>) {
  return Bun.spawnSync([process.execPath, SCRIPT], {
    env: { ...process.env, ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
}

describe("bench/read-model-idle.ts", () => {
  test("prints the busy cores of one replica and of two, and cleans up", () => {
    const before = leftDirs();
    const out = run({ READ_MODEL_IDLE_SEC: "1", READ_MODEL_IDLE_SETTLE_SEC: "0" });
    expect(out.stderr.toString()).toBe("");
    expect(out.exitCode).toBe(0);
    const lines = out.stdout.toString().trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^1 replica: active \d\.\d{4} cores, standby –, nats-server \d\.\d{4} \(\d+(\.\d+)? CPU-s over 1 s\)$/,
    );
    expect(lines[1]).toMatch(
      /^2 replicas: active \d\.\d{4} cores, standby \d\.\d{4}, nats-server \d\.\d{4} \(\d+(\.\d+)? CPU-s over 1 s\)$/,
    );
    expect(leftDirs()).toEqual(before);
    expect(leftProcesses()).toBe("");
  }, 90_000);

  test("a setting that is not a whole number is refused with its key", () => {
    const out = run({ READ_MODEL_IDLE_SEC: "0.5" });
    expect(out.exitCode).toBe(2);
    expect(out.stderr.toString()).toContain(
      "READ_MODEL_IDLE_SEC must be a whole number of at least 1; got '0.5'",
    );
  });
});
