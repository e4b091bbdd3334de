/**
 * How the benchmark reads its children: a RESULT line longer than the kept log window, written in
 * many chunks, is read whole; a process's CPU is split by kind of thread from /proc.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { cleanupAll, cpuSec, readResultLine, spawnChild } from "../../bench/lib/common.ts";
import { createProcessTable } from "../../bench/lib/procs.ts";

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
});

describe("ProcessTable.threads", () => {
  test("splits one process's CPU by kind of thread, numbers stripped, summing to its CPU", () => {
    const procs = createProcessTable();
    procs.trackPid("self", process.pid);
    procs.trackPid("gone", 2 ** 22 + 7);
    let x = 0;
    for (let i = 0; i < 3e6; i++) x += Math.sqrt(i);
    expect(x).toBeGreaterThan(0);
    const threads = procs.threads(["self", "gone", "untracked"]);
    expect([...threads.keys()]).toEqual(["self", "gone"]);
    const self = threads.get("self") as Map<string, number>;
    expect(self.size).toBeGreaterThan(0);
    for (const kind of self.keys()) expect(kind).not.toMatch(/\d$/);
    const sum = [...self.values()].reduce((a, b) => a + b, 0);
    // Both are read from /proc in 10 ms ticks, a moment apart.
    expect(Math.abs(sum - cpuSec(process.pid))).toBeLessThan(0.05);
    expect(threads.get("gone")?.size).toBe(0);
  });
});
