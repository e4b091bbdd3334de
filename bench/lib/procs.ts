/**
 * The processes a benchmark accounts for: CPU seconds and memory per name, read from /proc. A
 * name is one process (a hub service) or a group whose members come and go (PostgreSQL's
 * backends), so CPU is summed over every pid ever seen under the name, each at its last reading.
 */
import { readFileSync } from "node:fs";
import { cpuSec, rssMb, threadCpuSec } from "./common.ts";

export interface MemoryFigures {
  idle: number;
  peak: number;
  after: number;
}

/** Proportional set size in MB (shared pages split between the processes sharing them). */
export function pssMb(pid: number): number {
  try {
    const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, "utf8");
    const match = /^Pss:\s+(\d+)\s+kB/m.exec(rollup);
    return match?.[1] ? Number(match[1]) / 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

interface Tracked {
  readonly pids: () => readonly number[];
  /** "rss" for one process; "pss" for a group of processes sharing memory (summed). */
  readonly memory: "rss" | "pss";
  readonly lastCpu: Map<number, number>;
}

export function createProcessTable() {
  const tracked = new Map<string, Tracked>();
  const memory = new Map<string, MemoryFigures>();
  const cpuOf = (t: Tracked): number => {
    for (const pid of t.pids()) {
      const sec = cpuSec(pid);
      if (!Number.isNaN(sec)) t.lastCpu.set(pid, sec);
    }
    let sum = 0;
    for (const sec of t.lastCpu.values()) sum += sec;
    return sum;
  };
  const memoryOf = (t: Tracked): number => {
    const pids = t.pids();
    if (pids.length === 0) return Number.NaN;
    return pids.reduce((sum, pid) => sum + (t.memory === "pss" ? pssMb(pid) : rssMb(pid)), 0);
  };
  return {
    track(name: string, pids: () => readonly number[], kind: "rss" | "pss" = "rss"): void {
      tracked.set(name, { pids, memory: kind, lastCpu: new Map() });
    },
    trackPid(name: string, pid: number): void {
      tracked.set(name, { pids: () => [pid], memory: "rss", lastCpu: new Map() });
    },
    has: (name: string) => tracked.has(name),
    /** CPU seconds used so far, per name. */
    cpu(): Map<string, number> {
      return new Map([...tracked].map(([name, t]) => [name, cpuOf(t)]));
    },
    /**
     * CPU seconds so far of each kind of thread (its name without a trailing number: the JS
     * thread `bun.exe`, the compiler's `JITWorker`, the GC's `HeapHelper`, …) of each name that is
     * one process; groups are left out.
     */
    threads(names: readonly string[]): Map<string, Map<string, number>> {
      const out = new Map<string, Map<string, number>>();
      for (const name of names) {
        const pids = tracked.get(name)?.pids() ?? [];
        if (pids.length !== 1) continue;
        const kinds = new Map<string, number>();
        for (const [thread, sec] of threadCpuSec(pids[0] as number)) {
          const kind = thread.replace(/[\s\d]+$/, "");
          kinds.set(kind, (kinds.get(kind) ?? 0) + sec);
        }
        out.set(name, kinds);
      }
      return out;
    },
    sampleMemory(kind: "idle" | "after" | "peak"): void {
      for (const [name, t] of tracked) {
        const mb = memoryOf(t);
        const m = memory.get(name) ?? { idle: Number.NaN, peak: 0, after: Number.NaN };
        if (kind === "idle") m.idle = mb;
        if (kind === "after") m.after = mb;
        if (mb > m.peak) m.peak = mb;
        memory.set(name, m);
      }
    },
    memory(): ReadonlyMap<string, MemoryFigures> {
      return memory;
    },
    memoryKind: (name: string) => tracked.get(name)?.memory ?? "rss",
  };
}

export type ProcessTable = ReturnType<typeof createProcessTable>;

/** CPU seconds each name used between two readings of {@link ProcessTable.cpu}. */
export function cpuDelta(
  before: ReadonlyMap<string, number>,
  after: ReadonlyMap<string, number>,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, sec] of after) out[name] = Math.max(0, sec - (before.get(name) ?? 0));
  return out;
}
