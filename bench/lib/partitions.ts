/**
 * `BENCH_PARTITIONS=1,8,16 npm run bench`: the hub at each partition count P in one run (issue
 * 27's benchmarks). P is fixed when a store is created, so each P gets a fresh nats-server store
 * and a fresh hub; the receiver and the load generator are the same for every P. Per P: the idle
 * window after settling, then the e2e closed loop (bench.echo with a callback) with CPU of every
 * hub process and nats-server's counters read before it and after its drain. `BENCH_E2E_JOBS=0`
 * measures the idle window only. Over the idle window the messages each hub connection sent and
 * was sent (nats-server's /connz) say what wakes an idle process.
 *
 * Then, with the hub stopped, each JetStream floor BENCH_PEER names (floor, floor-split) at the
 * same P: the floor's work spread over P streams and view buckets of a fresh nats-server of its
 * own, jobs by the hub's partition function (bench/peer/floor-common.ts, floorLayout), in the same
 * closed loop with its counters read the same way. Its P = 8 ÷ P = 1 ratio is the bound for the
 * hub's: what the floor cannot keep within the target is out of reach on this stack.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT, round } from "./common.ts";
import type { FloorName, FloorPeer } from "./floor-peer.ts";
import { evaluatePartitionGoals, fmtNum as fmt, type GoalRow, status } from "./goals.ts";
import type { ConnMessages, CostTotals, JetStreamMonitor } from "./jetstream.ts";
import { connectionName, cpuUsPerUnit, HUB_PROCS, HUB_SERVICES } from "./phase.ts";
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
  /** The floors measured at each P after the hub (none: the hub alone). */
  readonly floors: readonly FloorName[];
  readonly startFloor: (name: FloorName, partitions: number) => Promise<FloorPeer>;
}

/** A floor's closed loop at one P, and the processes its CPU is summed over. */
export interface FloorFigures {
  readonly procs: readonly string[];
  readonly closed: E2eFigures;
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
  readonly floors: Partial<Record<FloorName, FloorFigures>>;
}

/** A floor at P: its own nats-server, the closed loop with its counters, then stopped. */
async function floorAt(
  deps: PartitionsDeps,
  name: FloorName,
  partitions: number,
): Promise<FloorFigures> {
  const { ctx } = deps;
  ctx.log(`P = ${partitions}: ${name} over ${partitions} stream(s)`);
  const floor = await deps.startFloor(name, partitions);
  try {
    if (!floor.monitor) throw new Error(`${name} started without a monitor of its nats-server`);
    const at: BenchContext = {
      ...ctx,
      peers: [floor],
      monitor: floor.monitor,
      hub: { base: "", token: "" },
    };
    const closed = await e2ePhase(at, floor, "closed", { countJetStream: true });
    return { procs: floor.procs, closed };
  } finally {
    await floor.stop();
  }
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
        out.push({ partitions, idle, idleMessages, floors: {} });
        continue;
      }
      // No backlog polling: each /jsz poll costs nats-server more the more streams and consumers
      // it lists (P × 4 durables), CPU the per-job figures would count against P; the floors are
      // not polled either, and this report shows no backlog peaks.
      const closed = await e2ePhase(at, "hub", "closed", { watchBacklog: false });
      out.push({ partitions, idle, idleMessages, closed, floors: {} });
    } finally {
      await hub.stop();
    }
    const floors = out[out.length - 1]?.floors ?? {};
    for (const name of deps.floors) floors[name] = await floorAt(deps, name, partitions);
  }
  return out;
}

const idleHubCores = (f: PartitionFigures) =>
  round(
    HUB_PROCS.reduce((a, p) => a + (f.idle.cores[p] ?? 0), 0),
    4,
  );

const perJob = (closed: E2eFigures, key: keyof CostTotals) =>
  closed.phase.jetstream?.perUnit[key] ?? Number.NaN;

const floorCpu = (figures: readonly PartitionFigures[], name: FloorName) => {
  const byP = figures.flatMap((f) => {
    const floor = f.floors[name];
    return floor ? [[f.partitions, cpuUsPerUnit(floor.closed.phase, floor.procs)] as const] : [];
  });
  return byP.length > 0 ? Object.fromEntries(byP) : undefined;
};

/** The goal rows of the partitions run (bench/lib/goals.ts). */
export function partitionGoals(figures: readonly PartitionFigures[]): GoalRow[] {
  const floor = floorCpu(figures, "floor");
  const floorSplit = floorCpu(figures, "floor-split");
  return evaluatePartitionGoals({
    cpuUsPerJob: Object.fromEntries(
      figures.flatMap((f) =>
        f.closed ? [[f.partitions, cpuUsPerUnit(f.closed.phase, HUB_PROCS)]] : [],
      ),
    ),
    idleCores: Object.fromEntries(figures.map((f) => [f.partitions, idleHubCores(f)])),
    ...(floor ? { floorCpuUsPerJob: floor } : {}),
    ...(floorSplit ? { floorSplitCpuUsPerJob: floorSplit } : {}),
  });
}

/**
 * JetStream work per job of a closed loop: stored (streams + KV), deliveries, acks, pulls, and
 * the NATS messages and kilobytes nats-server took in and sent out.
 */
const jetstreamCells = (closed: E2eFigures) => [
  `${fmt(perJob(closed, "stored"), 2)} (${fmt(perJob(closed, "storedStreams"), 2)} + ${fmt(perJob(closed, "storedKv"), 2)})`,
  fmt(perJob(closed, "deliveries"), 2),
  fmt(perJob(closed, "acks"), 2),
  fmt(perJob(closed, "pulls"), 2),
  `${fmt(perJob(closed, "messagesIn"), 1)} / ${fmt(perJob(closed, "messagesOut"), 1)}`,
  `${fmt(perJob(closed, "bytesIn") / 1000, 1)} / ${fmt(perJob(closed, "bytesOut") / 1000, 1)}`,
];
const TRAFFIC_HEADERS = ["NATS msgs/job in / out", "NATS kB/job in / out"] as const;

const perProcUs = (closed: E2eFigures, name: string) =>
  fmt(((closed.phase.cpuSec[name] ?? Number.NaN) * 1e6) / closed.phase.units);

/** One row per floor and P: the floor's closed loop beside the hub's. */
function floorRows(figures: readonly PartitionFigures[]): string[][] {
  return figures.flatMap((f) =>
    Object.entries(f.floors).map(([name, floor]) => [
      name,
      String(f.partitions),
      fmt(floor.closed.completed),
      fmt(floor.closed.completedPerSec),
      fmt(cpuUsPerUnit(floor.closed.phase, floor.procs)),
      floor.procs
        .map((p) => `${p.replace(`${name}-`, "")} ${perProcUs(floor.closed, p)}`)
        .join(" / "),
      ...jetstreamCells(floor.closed),
    ]),
  );
}

function table(header: readonly string[], rows: readonly string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)];
}

/** The side-by-side table (one row per P) and the partitions goals. */
export function renderPartitionsReport(figures: readonly PartitionFigures[]): string {
  const dash = "–";
  const rows = figures.map((f) => [
    String(f.partitions),
    fmt(f.closed?.completed ?? Number.NaN),
    fmt(f.closed?.completedPerSec ?? Number.NaN),
    f.closed ? fmt(cpuUsPerUnit(f.closed.phase, HUB_PROCS)) : dash,
    f.closed ? HUB_PROCS.map((p) => perProcUs(f.closed as E2eFigures, p)).join(" / ") : dash,
    ...(f.closed ? jetstreamCells(f.closed) : [dash, dash, dash, dash, dash, dash]),
    fmt(idleHubCores(f), 4),
    fmt(f.closed?.cpuCores["(others)"] ?? Number.NaN, 2),
  ]);
  const idleRows = figures.map((f) => [
    String(f.partitions),
    ...HUB_PROCS.map((p) => fmt(f.idle.cores[p] ?? Number.NaN, 4)),
    HUB_SERVICES.map((p) => {
      const m = f.idleMessages[connectionName(p)];
      return m ? `${fmt(m.in, 2)}/${fmt(m.out, 2)}` : "–";
    }).join("  "),
  ]);
  const floors = floorRows(figures);
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
        ...TRAFFIC_HEADERS,
        "idle hub cores",
        "others' cores",
      ],
      rows,
    ),
    ...(floors.length > 0
      ? [
          "",
          "JetStream floors at the same P (their work over P streams and view buckets, jobs by partitionOf):",
          ...table(
            [
              "floor",
              "P",
              "jobs",
              "done/s",
              "CPU µs/job",
              "µs/job per process",
              "JetStream stored/job (streams + KV)",
              "deliveries/job",
              "acks/job",
              "pulls/job",
              ...TRAFFIC_HEADERS,
            ],
            floors,
          ),
        ]
      : []),
    "",
    `idle window per process (cores), and NATS messages/s each service sent/received:`,
    ...table(["P", ...HUB_PROCS, `msgs/s in/out ${HUB_SERVICES.join(" / ")}`], idleRows),
    "",
    "partitions goals (issue 27), with the floors' ratio for the same target where measured:",
    ...table(
      ["goal", "value", "target", "JetStream floor", "split floor", "status"],
      goals.map((g) => [
        g.goal,
        g.value,
        g.target,
        g.floor?.value ?? "",
        g.floorSplit?.value ?? "",
        status(g),
      ]),
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
