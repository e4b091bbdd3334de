/**
 * How the benchmark reads its children: a RESULT line longer than the kept log window, written in
 * many chunks, is read whole; a process's CPU is split by kind of thread from /proc.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { cleanupAll, cpuSec, readResultLine, spawnChild } from "../../bench/lib/common.ts";
import { createProcessTable } from "../../bench/lib/procs.ts";

const COMMON = new URL("../../bench/lib/common.ts", import.meta.url).pathname;

afterAll(() => cleanupAll());

describe("readResultLine", () => {
  test("a RESULT line of 300 KB, written in chunks after other output, parses whole", async () => {
    // 3,000 lines of noise first, then the line in 1 KB pieces with a pause between some, so the
    // reader sees it partial many times and its log is trimmed while it arrives.
    const script = `
      for (let i = 0; i < 3000; i++) process.stdout.write("noise line " + i + " ".repeat(40) + "\\n");
      const line = "RESULT " + JSON.stringify({ stamps: Array.from({ length: 12000 }, (_, i) => "job_" + i) }) + "\\n";
      for (let i = 0; i < line.length; i += 1024) {
        process.stdout.write(line.slice(i, i + 1024));
        if (i % 65536 === 0) await Bun.sleep(5);
      }
      await Bun.sleep(200);
    `;
    const child = spawnChild("long-result", [process.execPath, "-e", script]);
    const result = await readResultLine<{ stamps: string[] }>(child, "RESULT", 20_000);
    expect(result.stamps).toHaveLength(12_000);
    expect(result.stamps[11_999]).toBe("job_11999");
    await child.stop();
  });

  test("a child that exits right after writing a 1.4-MB line through writeResultLine loses none of it", async () => {
    // As bench/e2e.ts ends a long loop (its stamps: 375 KB from a 50,000-job loop): the line,
    // then process.exit(0), while this (busy) process is not reading the pipe. Without waiting
    // for stdout, the child loses what its pipe had not taken.
    const script = `
      const { writeResultLine } = await import(${JSON.stringify(COMMON)});
      const stamps = Object.fromEntries(Array.from({ length: 20000 }, (_, i) => ["job_" + String(i).padStart(22, "x"), [1796656873582.8577 + i, 1796656873606.5513 + i]]));
      await writeResultLine("RESULT", { stamps });
      process.exit(0);
    `;
    const child = spawnChild("exits-after-result", [process.execPath, "-e", script]);
    const busyUntil = Date.now() + 1_000;
    while (Date.now() < busyUntil) {}
    const result = await readResultLine<{ stamps: Record<string, number[]> }>(
      child,
      "RESULT",
      20_000,
    );
    expect(Object.keys(result.stamps)).toHaveLength(20_000);
    expect(result.stamps[`job_${"19999".padStart(22, "x")}`]?.[1]).toBe(1796656873606.5513 + 19999);
  });
});

describe("ProcessTable.threads", () => {
  test("splits one process's CPU by kind of thread, numbers stripped; the busy thread's kind grows", () => {
    const procs = createProcessTable();
    procs.trackPid("self", process.pid);
    procs.trackPid("gone", 2 ** 22 + 7);
    const mainKind = readFileSync("/proc/self/comm", "utf8")
      .trim()
      .replace(/[\s\d]+$/, "");
    const before = procs.threads(["self"]).get("self") as Map<string, number>;
    // 150 ms of CPU on this (the JavaScript) thread.
    const start = process.cpuUsage().user;
    let x = 0;
    while (process.cpuUsage().user - start < 150_000) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    const threads = procs.threads(["self", "gone", "untracked"]);
    expect([...threads.keys()]).toEqual(["self", "gone"]);
    const self = threads.get("self") as Map<string, number>;
    for (const kind of self.keys()) expect(kind).not.toMatch(/\d$/);
    expect((self.get(mainKind) ?? 0) - (before.get(mainKind) ?? 0)).toBeGreaterThanOrEqual(0.1);
    // Live threads only: the process's own figure also counts threads that have ended.
    const sum = [...self.values()].reduce((a, b) => a + b, 0);
    expect(sum).toBeLessThanOrEqual(cpuSec(process.pid) + 0.001);
    expect(threads.get("gone")?.size).toBe(0);
  });
});
