/**
 * `BENCH_PARTITIONS=1,8,16 npm run bench`: the hub at each partition count P in one run (issue
 * 27's benchmarks). P is fixed when a store is created, so each P gets a fresh nats-server store
 * and a fresh hub; the receiver and the load generator are the same for every P. Per P: the idle
 * window after settling, then the e2e closed loop (bench.echo with a callback) with CPU of every
 * hub process and nats-server's counters read before it and after its drain. `BENCH_E2E_JOBS=0`
 * measures the idle window only. Over the idle window the messages each hub connection sent and
 * was sent (nats-server's /connz) say what wakes an idle process.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, round } from "./common.ts";
import { evaluatePartitionGoals, fmtNum as fmt, type GoalRow, status } from "./goals.ts";
import type { ConnMessages, CostTotals, JetStreamMonitor } from "./jetstream.ts";
import { cpuUsPerUnit, HUB_PROCS, HUB_SERVICES } from "./phase.ts";
import type { BenchContext, E2eFigures, IdleFigures } from "./scenarios.ts";
import { e2ePhase, measureIdle } from "./scenarios.ts";

/** `BENCH_PARTITIONS`: one count or a comma list (`1,8,16`), each 1..256; undefined when unset. */
export function parsePartitionList(raw: string | undefined): number[] | undefined {
  if (raw === undefined || raw.trim() === "") return undefined;
  const list = raw.split(",").map((s) => s.trim());
  const counts = list.map(Number);
  const bad = list.find((s, i) => {
    const n = counts[i] ?? Number.NaN;
    return !/^\d+$/.test(s) || n < 1 || n > 256;
  });
  if (bad !== undefined) {
    throw new Error(
      `BENCH_PARTITIONS takes partition counts 1..256, one or a comma list such as 1,8,16, not '${bad}'`,
    );
  }
  return [...new Set(counts)];
}

/** A hub started for one partition count: its processes by name, and how to stop it. */
export interface PartitionedHub {
  readonly base: string;
  readonly monitor: JetStreamMonitor;
  readonly pids: readonly (readonly [string, number])[];
  stop(): Promise<void>;
}

export interface PartitionsDeps {
  readonly ctx: Omit<BenchContext, "hub" | "monitor">;
  readonly token: string;
  readonly startHub: (partitions: number) => Promise<PartitionedHub>;
  readonly settleSec: number;
  readonly idleSec: number;
}

/** Messages per second of one connection over the idle window: sent by it (in) and to it (out). */
export type IdleMessageRates = Readonly<
  Record<string, { readonly in: number; readonly out: number }>
>;

export interface PartitionFigures {
  readonly partitions: number;
  readonly idle: IdleFigures;
  /** By connection name (`switchyard-<service>`), over the idle window. */
  readonly idleMessages: IdleMessageRates;
  /** Absent when the run measured the idle window only (BENCH_E2E_JOBS=0). */
  readonly closed?: E2eFigures;
}

/** Messages per second of each connection between two /connz readings `windowSec` apart. */
export function idleMessageRates(
  before: ConnMessages,
  after: ConnMessages,
  windowSec: number,
): IdleMessageRates {
  const rates: Record<string, { in: number; out: number }> = {};
  for (const [name, a] of Object.entries(after)) {
    const b = before[name] ?? { in: 0, out: 0 };
    rates[name] = {
      in: round(Math.max(0, a.in - b.in) / windowSec, 2),
      out: round(Math.max(0, a.out - b.out) / windowSec, 2),
    };
  }
  return rates;
}

export async function partitionsScenario(
  deps: PartitionsDeps,
  counts: readonly number[],
): Promise<PartitionFigures[]> {
  const out: PartitionFigures[] = [];
  for (const partitions of counts) {
    const { ctx } = deps;
    ctx.log(`partitions: starting a fresh store and hub at P = ${partitions}`);
    const hub = await deps.startHub(partitions);
    try {
      for (const [name, pid] of hub.pids) ctx.procs.trackPid(name, pid);
      const at: BenchContext = {
        ...ctx,
        monitor: hub.monitor,
        hub: { base: hub.base, token: deps.token },
      };
      ctx.log(`P = ${partitions}: settling ${deps.settleSec} s, then ${deps.idleSec} s idle`);
      await Bun.sleep(deps.settleSec * 1000);
      const connsBefore = await hub.monitor.connz();
      const idle = await measureIdle(at, deps.idleSec);
      const idleMessages = idleMessageRates(connsBefore, await hub.monitor.connz(), deps.idleSec);
      if (ctx.settings.e2eJobs === 0) {
        out.push({ partitions, idle, idleMessages });
        continue;
      }
      const closed = await e2ePhase(at, "hub", "closed");
      out.push({ partitions, idle, idleMessages, closed });
    } finally {
      await hub.stop();
    }
  }
  return out;
}

const idleHubCores = (f: PartitionFigures) =>
  round(
    HUB_PROCS.reduce((a, p) => a + (f.idle.cores[p] ?? 0), 0),
    4,
  );

const perJob = (f: PartitionFigures, key: keyof CostTotals) =>
  f.closed?.phase.jetstream?.perUnit[key] ?? Number.NaN;

/** The goal rows of the partitions run (bench/lib/goals.ts). */
export function partitionGoals(figures: readonly PartitionFigures[]): GoalRow[] {
  return evaluatePartitionGoals({
    cpuUsPerJob: Object.fromEntries(
      figures.flatMap((f) =>
        f.closed ? [[f.partitions, cpuUsPerUnit(f.closed.phase, HUB_PROCS)]] : [],
      ),
    ),
    idleCores: Object.fromEntries(figures.map((f) => [f.partitions, idleHubCores(f)])),
  });
}

function table(header: readonly string[], rows: readonly string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)];
}

/** The side-by-side table (one row per P) and the partitions goals. */
export function renderPartitionsReport(figures: readonly PartitionFigures[]): string {
  const svc = (f: PartitionFigures, name: string) =>
    f.closed
      ? fmt(((f.closed.phase.cpuSec[name] ?? Number.NaN) * 1e6) / f.closed.phase.units)
      : "–";
  const rows = figures.map((f) => [
    String(f.partitions),
    fmt(f.closed?.completed ?? Number.NaN),
    fmt(f.closed?.completedPerSec ?? Number.NaN),
    f.closed ? fmt(cpuUsPerUnit(f.closed.phase, HUB_PROCS)) : "–",
    HUB_PROCS.map((p) => svc(f, p)).join(" / "),
    `${fmt(perJob(f, "stored"), 2)} (${fmt(perJob(f, "storedStreams"), 2)} + ${fmt(perJob(f, "storedKv"), 2)})`,
    fmt(perJob(f, "deliveries"), 2),
    fmt(perJob(f, "acks"), 2),
    fmt(perJob(f, "pulls"), 2),
    fmt(idleHubCores(f), 4),
    fmt(f.closed?.cpuCores["(others)"] ?? Number.NaN, 2),
  ]);
  const idleRows = figures.map((f) => [
    String(f.partitions),
    ...HUB_PROCS.map((p) => fmt(f.idle.cores[p] ?? Number.NaN, 4)),
    HUB_SERVICES.map((p) => {
      const m = f.idleMessages[`switchyard-${p}`];
      return m ? `${fmt(m.in, 2)}/${fmt(m.out, 2)}` : "–";
    }).join("  "),
  ]);
  const goals = partitionGoals(figures);
  return [
    "",
    "partitions: e2e closed loop per P (phase and its drain) and idle CPU of the whole hub:",
    ...table(
      [
        "P",
        "jobs",
        "done/s",
        "hub CPU µs/job",
        `µs/job ${HUB_PROCS.join(" / ")}`,
        "JetStream stored/job (streams + KV)",
        "deliveries/job",
        "acks/job",
        "pulls/job",
        "idle hub cores",
        "others' cores",
      ],
      rows,
    ),
    "",
    `idle window per process (cores), and NATS messages/s each service sent/received:`,
    ...table(["P", ...HUB_PROCS, `msgs/s in/out ${HUB_SERVICES.join(" / ")}`], idleRows),
    "",
    "partitions goals (issue 27):",
    ...table(
      ["goal", "value", "target", "status"],
      goals.map((g) => [g.goal, g.value, g.target, status(g)]),
    ),
    "",
  ].join("\n");
}

/** Writes bench/results/<start>-partitions.json and prints the report. */
export function savePartitionsRun(
  results: {
    readonly startedAt: string;
    readonly machine: Record<string, unknown>;
    readonly versions: Record<string, string>;
    readonly notes: readonly string[];
  },
  figures: readonly PartitionFigures[],
): void {
  const resultsDir = join(ROOT, "bench/results");
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `${results.startedAt.replace(/[:.]/g, "-")}-partitions.json`);
  writeFileSync(file, `${JSON.stringify({ ...results, partitions: figures }, null, 2)}\n`);
  const m = results.machine;
  const v = results.versions;
  process.stdout.write(
    `\nmachine: ${m.cores} cores, ${m.memoryGb} GB; Bun ${v.bun}, nats-server ${v.nats}, hub ${v.hub}\n`,
  );
  process.stdout.write(renderPartitionsReport(figures));
  for (const n of results.notes) process.stdout.write(`note: ${n}\n`);
  process.stdout.write(`\nraw figures: ${file}\n`);
}
