/**
 * The benchmark's printed report: the scenario table, nats-server's work per job, CPU per job and
 * idle CPU per system, and the goals. Everything it prints is also in the results JSON.
 */

import type { Measured } from "../compiler.ts";
import type { RoundRatios } from "./e2e-rounds.ts";
import {
  evaluateGoals,
  fmtNum as fmt,
  type GoalInputs,
  type GoalRow,
  type StepCosts,
  status,
} from "./goals.ts";
import type { CostTotals } from "./jetstream.ts";
import { PEER_LABELS, type PeerName } from "./peers.ts";
import {
  cpuUsPerUnit,
  HUB_PROCS,
  HUB_SERVICES,
  type PhaseFigures,
  perCpuSec,
  systemCpuSec,
} from "./phase.ts";
import type { MemoryFigures } from "./procs.ts";
import type {
  E2eFigures,
  E2eScenarioFigures,
  GetFigures,
  IdleFigures,
  IngressFigures,
  LoadFigures,
  PathFigures,
  ReplayFigures,
} from "./scenarios.ts";

export interface BenchResults {
  startedAt: string;
  machine: Record<string, unknown>;
  versions: Record<string, string>;
  settings: Record<string, unknown>;
  /** Per system, the process names whose CPU is that system's. */
  systems: Record<string, readonly string[]>;
  peers: Record<string, Readonly<Record<string, string>>>;
  scenarios: {
    ingress?: IngressFigures;
    replay?: ReplayFigures;
    get?: GetFigures;
    e2e?: E2eScenarioFigures;
    paths?: PathFigures;
    compiler?: { runs: Measured[] };
  };
  idle: { fresh?: IdleFigures; afterLoad?: IdleFigures };
  memoryMb: Record<string, MemoryFigures>;
  goals: GoalRow[];
  notes: string[];
}

function table(header: readonly string[], rows: readonly string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)];
}

const lat = (r: LoadFigures) =>
  `${fmt(r.latencyMs.p50, 1)} / ${fmt(r.latencyMs.p99, 1)} / ${fmt(r.latencyMs.max)}`;
const errs = (r: LoadFigures) => fmt(r.non2xx + r.errors + r.timeouts);
const others = (r: { cpuCores: Record<string, number> } | undefined) =>
  fmt(r?.cpuCores["(others)"], 2);
/** CPU per answered request of the process under test, µs (during the load, not the drain). */
const cpuPer = (r: LoadFigures, who: string) => {
  const cores = r.cpuCores[who];
  return cores === undefined ? "" : `; ${fmt((cores * 1e6) / r.okPerSec)} µs CPU/req in ${who}`;
};
const peerServer = (name: PeerName) => `${name}-server`;

function scenarioRows(r: BenchResults): string[][] {
  const rows: string[][] = [];
  const add = (...cells: string[]) => rows.push(cells);
  const s = r.scenarios;
  const loadRow = (label: string, x: LoadFigures, who: string) =>
    add(label, `${fmt(x.okPerSec)}/s`, `${lat(x)}${cpuPer(x, who)}`, errs(x));
  if (s.ingress) {
    const i = s.ingress;
    loadRow("1 ingress POST /run (unique)", i.hub, "ingress");
    if (i.hubWithoutIndex) {
      loadRow("1 ingress POST /run, search index off", i.hubWithoutIndex, "ingress");
      for (const [name, p] of Object.entries(i.peers) as [PeerName, LoadFigures][]) {
        add(
          `  index off ÷ ${name}`,
          fmt(i.hubWithoutIndex.okPerSec / p.okPerSec, 2),
          "the same hub with the search index off",
          "",
        );
      }
    }
    loadRow("2 ceiling (bare publish), run 1", i.ceiling, "ceiling");
    loadRow("2 ceiling, run 2 (after hub+peers)", i.ceilingAgain, "ceiling");
    add(
      "  busy cores not ours (shared box)",
      `${others(i.ceiling)} / ${others(i.hub)} / ${others(i.ceilingAgain)}`,
      "during ceiling 1 / ingress / ceiling 2",
      "",
    );
    add(
      "  ingress ÷ ceiling (mean)",
      fmt(i.ratioToCeiling, 2),
      `target ≥ 0.80 (ceiling mean ${fmt(i.ceilingMeanPerSec)}/s)`,
      "",
    );
    for (const [name, p] of Object.entries(i.peers) as [PeerName, LoadFigures][]) {
      loadRow(`8 ${name} POST /run`, p, peerServer(name));
      add(
        `  ingress ÷ ${name}`,
        fmt(i.ratioToPeer[name], 2),
        `busy cores not ours ${others(p)}`,
        "",
      );
    }
  }
  if (s.replay) loadRow("4 replay (same request_id)", s.replay.hub, "ingress");
  if (s.get) {
    loadRow("5 GET /jobs/{id}", s.get.hub, "ingress");
    for (const [name, p] of Object.entries(s.get.peers) as [PeerName, LoadFigures][]) {
      loadRow(`8 ${name} GET /jobs/:id`, p, peerServer(name));
      add(`  GET ÷ ${name}`, fmt(s.get.ratioToPeer[name], 2), "", "");
    }
  }
  if (s.e2e) {
    const e = s.e2e;
    const l = (x: { p50: number; p99: number } | null) =>
      x ? `${fmt(x.p50, 1)} / ${fmt(x.p99, 1)}` : "–";
    const peaks = (x: E2eFigures) => {
      const top = Object.entries(x.backlogPeaks ?? {})
        .filter(([, n]) => n > 0)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([k, n]) => `${k.slice(k.indexOf("/") + 1)} ${fmt(n)}`);
      return top.length > 0 ? `; backlog peak ${top.join(", ")}` : "";
    };
    const row = (label: string, x: E2eFigures) =>
      add(
        label,
        `${fmt(x.completedPerSec)} done/s`,
        `GET ${l(x.toDoneMs)}; cb ${l(x.toCallbackMs)}${peaks(x)}; others ${others(x)} cores`,
        fmt(x.submitErrors + (x.accepted - x.completed)),
      );
    row(`3 e2e hub ${fmt(e.hub.closed.submitted)} jobs`, e.hub.closed);
    row(`3 e2e hub @${r.settings.rate}/s`, e.hub.rate);
    for (const [name, p] of Object.entries(e.peers) as [
      PeerName,
      { closed: E2eFigures; rate: E2eFigures },
    ][]) {
      row(`8 e2e ${name} ${fmt(p.closed.submitted)} jobs`, p.closed);
      row(`8 e2e ${name} @${r.settings.rate}/s`, p.rate);
      add(`  e2e ÷ ${name}`, fmt(e.ratioToPeer[name], 2), "", "");
      const paired = e.byRound?.[name];
      if (paired) add(`  by round ÷ ${name}`, ...byRoundCells(paired), "");
    }
  }
  for (const p of s.paths ?? []) {
    const x = p.figures;
    add(
      `9 path: ${p.path}`,
      `${fmt(x.completedPerSec)} done/s`,
      `cb ${fmt(x.toCallbackMs?.p50, 1)} / ${fmt(x.toCallbackMs?.p99, 1)}; ${fmt(x.completed)} of ${fmt(x.submitted)} jobs`,
      fmt(x.submitErrors + (x.accepted - x.completed)),
    );
  }
  for (const c of s.compiler?.runs ?? []) {
    add(
      `7 compile ${c.input} (${c.tool})`,
      c.finished ? `${fmt(c.seconds, 1)} s` : "did not finish",
      `RSS ${fmt(c.peakRssMb)} MB; out ${fmt(c.outputBytes / 1e6, 1)} MB; ${c.tools} tools; largest ${fmt((c.largestTool?.bytes ?? 0) / 1e3, 1)} kB`,
      c.note ?? "",
    );
  }
  for (const [name, m] of Object.entries(r.memoryMb)) {
    const kind = name === "postgres" ? "PSS, its backends" : "RSS";
    add(
      `6 ${kind} ${name} (MB)`,
      `${fmt(m.idle)} idle`,
      `${fmt(m.peak)} peak; ${fmt(m.after)} after`,
      "",
    );
  }
  return rows;
}

/** The hub ÷ a peer round by round: the medians, then each round's ratios. */
function byRoundCells(r: RoundRatios): [string, string] {
  const list = (xs: readonly number[]) => xs.map((x) => fmt(x, 2)).join(", ");
  return [
    `${fmt(r.median.donePerSec, 2)} done/s, ${fmt(r.median.jobsPerCpuSec, 2)} jobs/CPU-s (medians)`,
    `done/s ${list(r.donePerSec)}; jobs per CPU-s ${list(r.jobsPerCpuSec)}`,
  ];
}

/** The hub phases whose nats-server counters were read, with what they are divided by. */
function hubPhases(r: BenchResults): [string, PhaseFigures][] {
  const s = r.scenarios;
  const out: [string, PhaseFigures | undefined][] = [
    ["ceiling (per run)", s.ingress?.ceiling.phase],
    ["ingress POST /run, sleep0 (per job)", s.ingress?.hub.phase],
    ["ingress POST /run, index off (per job)", s.ingress?.hubWithoutIndex?.phase],
    ["replay (per request)", s.replay?.hub.phase],
    ["GET /jobs (per request)", s.get?.hub.phase],
    ["e2e closed loop, echo + callback (per job)", s.e2e?.hub.closed.phase],
    [`e2e @${r.settings.rate}/s (per job)`, s.e2e?.hub.rate.phase],
  ];
  for (const p of s.paths ?? []) out.push([`path: ${p.path} (per job)`, p.figures.phase]);
  return out.filter((e): e is [string, PhaseFigures] => e[1]?.jetstream !== undefined);
}

/** Hub CPU µs per unit minus what the hub burns idle (fresh idle cores × the phase's wall time). */
function aboveIdle(r: BenchResults, p: PhaseFigures): number {
  const idle = r.idle.fresh;
  if (!idle || p.units === 0) return Number.NaN;
  const idleCores = HUB_PROCS.reduce((a, name) => a + (idle.cores[name] ?? 0), 0);
  return ((systemCpuSec(p, HUB_PROCS) - idleCores * p.wallSec) * 1e6) / p.units;
}

function costRows(r: BenchResults): string[] {
  const phases = hubPhases(r);
  if (phases.length === 0) return [];
  const cell = (p: PhaseFigures, key: keyof CostTotals, digits = 2) =>
    fmt(p.jetstream?.perUnit[key], digits);
  const rows = phases.map(([label, p]) => [
    label,
    fmt(p.units),
    `${cell(p, "stored")} (${cell(p, "storedStreams")} + ${cell(p, "storedKv")})`,
    cell(p, "bytes", 0),
    cell(p, "publishes"),
    cell(p, "deliveries"),
    cell(p, "acks"),
    cell(p, "pulls"),
    cell(p, "directGets"),
    cell(p, "apiCalls"),
    `${cell(p, "messagesIn", 1)} / ${cell(p, "messagesOut", 1)}`,
    fmt(cpuUsPerUnit(p, HUB_PROCS)),
    fmt(aboveIdle(r, p)),
  ]);
  const out = [
    "",
    "nats-server's work per unit (counters read before each phase and after its drain):",
    ...table(
      [
        "phase",
        "units",
        "stored (streams + KV)",
        "bytes",
        "publishes",
        "deliveries",
        "acks",
        "pulls",
        "direct gets",
        "API calls",
        "NATS msgs in / out",
        "hub CPU µs",
        "above idle",
      ],
      rows,
    ),
  ];
  const closed = r.scenarios.e2e?.hub.closed.phase;
  const js = closed?.jetstream;
  if (closed && js) {
    const per = (n: number) => fmt(n / closed.units, 2);
    // Rows that would print 0.00 everywhere (e.g. an idle work queue's heartbeat pulls) are left out.
    const visible = (n: number) => n / closed.units >= 0.005;
    const detail = [
      ...Object.entries(js.cost.streams)
        .filter(([, c]) => visible(c.stored + c.publishes + c.directGets))
        .map(([name, c]) => [
          `stream ${name}`,
          `stored ${per(c.stored)}, ${fmt(c.bytes / closed.units)} B, publishes ${per(c.publishes)}, direct gets ${per(c.directGets)}`,
        ]),
      ...Object.entries(js.cost.consumers)
        .filter(([, c]) => visible(c.deliveries + c.acks + c.pulls))
        .map(([name, c]) => [
          `consumer ${name}`,
          `deliveries ${per(c.deliveries)}, acks ${per(c.acks)}, pulls ${per(c.pulls)}`,
        ]),
    ];
    out.push(
      "",
      "e2e closed loop, per job, by stream and consumer:",
      ...table(["where", "per job"], detail),
    );
  }
  return out;
}

function cpuRows(r: BenchResults): string[] {
  const s = r.scenarios;
  const systems = Object.entries(r.systems);
  const idle = (w: IdleFigures | undefined, procs: readonly string[]) =>
    w
      ? fmt(
          procs.reduce((a, p) => a + (w.cores[p] ?? 0), 0),
          3,
        )
      : "–";
  const rows = systems.map(([name, procs]) => {
    const post = name === "hub" ? s.ingress?.hub.phase : s.ingress?.peers[name as PeerName]?.phase;
    const e2e = name === "hub" ? s.e2e?.hub : s.e2e?.peers[name as PeerName];
    const closed = cpuUsPerUnit(e2e?.closed.phase, procs);
    const rate = cpuUsPerUnit(e2e?.rate.phase, procs);
    return [
      name === "hub"
        ? `hub (nats-server + ${HUB_SERVICES.join(", ")})`
        : PEER_LABELS[name as PeerName],
      fmt(cpuUsPerUnit(post, procs)),
      fmt(closed),
      fmt(rate),
      fmt(rate / closed, 2),
      fmt(perCpuSec(e2e?.closed.phase, procs)),
      idle(r.idle.fresh, procs),
      idle(r.idle.afterLoad, procs),
    ];
  });
  return [
    "",
    "CPU per job of each whole system (phase and its drain), and idle CPU:",
    ...table(
      [
        "system",
        "POST µs/job",
        "e2e µs/job",
        `@${r.settings.rate}/s µs/job`,
        "ratio",
        "e2e jobs/CPU-s",
        "idle cores (fresh)",
        "idle cores (after load)",
      ],
      rows,
    ),
    ...threadRows(s.e2e?.hub.closed.phase),
  ];
}

/** The hub's e2e closed loop, µs per job by process and kind of thread (JS, JIT, GC, …). */
function threadRows(phase: PhaseFigures | undefined): string[] {
  const threads = phase?.threadCpuSec;
  if (!threads || phase.units === 0) return [];
  const kinds = [...new Set(Object.values(threads).flatMap((t) => Object.keys(t)))].sort();
  const rows = Object.entries(threads).map(([name, t]) => [
    name,
    ...kinds.map((k) => fmt(((t[k] ?? 0) * 1e6) / phase.units)),
  ]);
  return [
    "",
    "Hub CPU per job of the e2e closed loop by kind of thread (µs):",
    ...table(["process", ...kinds], rows),
  ];
}

/** CPU µs per job of the callback and executor processes in one phase (`prefix`: the floor's). */
function stepCosts(phase: PhaseFigures | undefined, prefix = ""): StepCosts | undefined {
  if (!phase || phase.units === 0) return undefined;
  const us = (proc: string) => {
    const name = `${prefix}${proc}`;
    return phase.cpuSec[name] === undefined ? Number.NaN : cpuUsPerUnit(phase, [name]);
  };
  return { callback: us("callback"), executor: us("executor") };
}

export function goalInputs(r: BenchResults): GoalInputs {
  const s = r.scenarios;
  const e = s.e2e;
  const hubProcs = r.systems.hub ?? HUB_PROCS;
  const perSystem = (hub: number | undefined, peer: (n: PeerName) => number | undefined) => ({
    hub,
    bullmq: peer("bullmq"),
    bullmqNode: peer("bullmq-node"),
    pg: peer("pg"),
    floor: peer("floor"),
    floorSplit: peer("floor-split"),
    floorFeed: peer("floor-feed"),
  });
  const floor = e?.peers.floor;
  const floorProcs = r.systems.floor ?? [];
  // The settled window before any load. The after-load window (printed beside it) also holds
  // the load's own tail: in 10-s samples after the e2e loop nats-server spent 0.035, then 0.010
  // cores, before falling back to about 0.002 (2026-11-25): work the load left behind, not idle.
  const idle = r.idle.fresh;
  const idleOf = (procs: readonly string[]) =>
    idle ? procs.reduce((a, p) => a + (idle.cores[p] ?? 0), 0) : undefined;
  const rss: Record<string, number> = {};
  for (const svc of HUB_SERVICES) {
    const m = r.memoryMb[svc];
    if (m) rss[svc] = m.peak;
  }
  return {
    e2eDonePerSec: perSystem(
      e?.hub.closed.completedPerSec,
      (n) => e?.peers[n]?.closed.completedPerSec,
    ),
    e2eJobsPerCpuSec: perSystem(perCpuSec(e?.hub.closed.phase, hubProcs), (n) =>
      perCpuSec(e?.peers[n]?.closed.phase, r.systems[n] ?? []),
    ),
    postPerSec: perSystem(s.ingress?.hub.okPerSec, (n) => s.ingress?.peers[n]?.okPerSec),
    postWithoutIndexPerSec: s.ingress?.hubWithoutIndex?.okPerSec,
    getPerSec: perSystem(s.get?.hub.okPerSec, (n) => s.get?.peers[n]?.okPerSec),
    ingressToCeiling: s.ingress?.ratioToCeiling,
    p99CallbackAtRateMs: e?.hub.rate.toCallbackMs?.p99,
    rate: Number(r.settings.rate),
    hubCpuPerJobUs: {
      rate: cpuUsPerUnit(e?.hub.rate.phase, hubProcs),
      closed: cpuUsPerUnit(e?.hub.closed.phase, hubProcs),
    },
    callbackAndExecutorUs: {
      hub: stepCosts(e?.hub.closed.phase),
      floorSplit: stepCosts(e?.peers["floor-split"]?.closed.phase, "floor-split-"),
    },
    idleHubCores: idleOf(hubProcs),
    idleFloorCores: {
      floor: r.systems.floor ? idleOf(r.systems.floor) : undefined,
      floorSplit: r.systems["floor-split"] ? idleOf(r.systems["floor-split"]) : undefined,
    },
    serviceRssPeakMb: rss,
    ...(floor
      ? {
          floor: {
            p99CallbackAtRateMs: floor.rate.toCallbackMs?.p99,
            cpuPerJobUs: {
              rate: cpuUsPerUnit(floor.rate.phase, floorProcs),
              closed: cpuUsPerUnit(floor.closed.phase, floorProcs),
            },
          },
        }
      : {}),
  };
}

export function renderReport(r: BenchResults): string {
  r.goals = evaluateGoals(goalInputs(r));
  const m = r.machine;
  return [
    "",
    `machine: ${m.cores} cores, ${m.memoryGb} GB; Bun ${r.versions.bun}, nats-server ${r.versions.nats}, hub ${r.versions.hub}`,
    ...table(
      ["scenario", "rate", "latency ms p50 / p99 / max (or figures)", "errors"],
      scenarioRows(r),
    ),
    ...costRows(r),
    ...cpuRows(r),
    "",
    "goals (issue 14), with the JetStream floors' figures for the same target where they apply:",
    ...table(
      ["goal", "value", "target", "JetStream floor", "split floor", "feed floor", "status"],
      r.goals.map((g) => [
        g.goal,
        g.value,
        g.target,
        g.floor?.value ?? "",
        g.floorSplit?.value ?? "",
        g.floorFeed?.value ?? "",
        status(g),
      ]),
    ),
    ...r.notes.map((n) => `note: ${n}`),
    "",
  ].join("\n");
}
