/**
 * One measured phase of the benchmark: a load or e2e run in its own process, then the drain of
 * the background work it caused. CPU per process and, for the hub, nats-server's counters are read
 * before the run and after the drain, so the figures per job include every bit of work the jobs
 * caused, also what finished after the load generator stopped.
 */
import { join } from "node:path";
import type { E2eResult, E2eSpec } from "../e2e.ts";
import type { LoadResult, LoadSpec } from "../load.ts";
import { cpuSec, machineBusySec, ROOT, readResultLine, round, spawnChild } from "./common.ts";
import {
  type CostTotals,
  diffSnapshots,
  type JetStreamCost,
  type JetStreamMonitor,
  perUnit,
} from "./jetstream.ts";
import { cpuDelta, type ProcessTable } from "./procs.ts";

/**
 * The hub's service processes as Kubernetes deploys them (deploy/k8s/base), and the services each
 * runs (`switchyard serve <services...>`): the read models share one process, so the search index
 * is fed from the projector's deliveries.
 */
export const HUB_PROCESS_SERVICES = {
  ingress: ["ingress"],
  "read-models": ["projector", "indexer"],
  executor: ["executor"],
  callback: ["callback"],
} as const;
export type HubService = keyof typeof HUB_PROCESS_SERVICES;
/** The service processes, by the name the CPU and memory tables show. */
export const HUB_SERVICES = Object.keys(HUB_PROCESS_SERVICES) as readonly HubService[];
/** The whole hub: nats-server and its service processes. */
export const HUB_PROCS = ["nats-server", ...HUB_SERVICES] as const;
/** The NATS connection name of a service process (shared/hub: the services joined with "+"). */
export const connectionName = (svc: HubService) =>
  `switchyard-${HUB_PROCESS_SERVICES[svc].join("+")}`;

export interface PhaseFigures {
  /** From the run's start to the end of the drain. */
  readonly wallSec: number;
  readonly drainSec: number;
  /** Jobs completed (or requests answered) the per-unit figures divide by. */
  readonly units: number;
  readonly unit: "job" | "request" | "run";
  /** CPU seconds per tracked process over the phase. */
  readonly cpuSec: Readonly<Record<string, number>>;
  /** Of the processes the phase asked for: CPU seconds per kind of thread (procs.threads). */
  readonly threadCpuSec?: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly jetstream?: {
    readonly cost: JetStreamCost;
    readonly perUnit: Readonly<Record<keyof CostTotals, number>>;
  };
}

export interface PhaseDeps {
  readonly bun: string;
  readonly procs: ProcessTable;
  readonly monitor: JetStreamMonitor;
}

/** Busy cores per process during the child's own run (not the drain), and the machine's. */
type Cores = Record<string, number>;

export type Measured<T> = T & { readonly cpuCores: Cores; readonly phase: PhaseFigures };

async function runChild<T>(
  deps: PhaseDeps,
  script: string,
  spec: unknown,
  timeoutMs: number,
): Promise<T & { cpuCores: Cores }> {
  const child = spawnChild(script, [deps.bun, join(ROOT, script), JSON.stringify(spec)], {
    NODE_ENV: "production",
  });
  const before = deps.procs.cpu();
  const machineBefore = machineBusySec();
  const t0 = performance.now();
  try {
    const result = await readResultLine<T>(child, "RESULT", timeoutMs);
    const wallSec = (performance.now() - t0) / 1000;
    const cores: Cores = {};
    for (const [who, sec] of Object.entries(cpuDelta(before, deps.procs.cpu()))) {
      cores[who] = round(sec / wallSec, 2);
    }
    cores["load generator"] = round(cpuSec(child.pid) / wallSec, 2);
    // Everything else on the machine (other people's work on a shared box): busy cores not
    // accounted to a bench process.
    const machine = (machineBusySec() - machineBefore) / wallSec;
    const ours = Object.values(cores).reduce((a, b) => a + (Number.isNaN(b) ? 0 : b), 0);
    cores["(machine, all)"] = round(machine, 2);
    cores["(others)"] = round(Math.max(0, machine - ours), 2);
    return { ...result, cpuCores: cores };
  } finally {
    await child.stop();
  }
}

export interface PhaseSpec<T> {
  readonly run: () => Promise<T & { cpuCores: Cores }>;
  readonly drain: () => Promise<number>;
  readonly units: (result: T) => number;
  readonly unit: PhaseFigures["unit"];
  /** Read nats-server's counters (phases the hub or the ceiling serve). */
  readonly countJetStream: boolean;
  /** Processes whose CPU is also split by kind of thread (JS, JIT compiler, GC, …). */
  readonly threadsOf?: readonly string[];
}

export async function measurePhase<T>(deps: PhaseDeps, spec: PhaseSpec<T>): Promise<Measured<T>> {
  const snapBefore = spec.countJetStream ? await deps.monitor.snapshot() : undefined;
  const cpuBefore = deps.procs.cpu();
  const threadsBefore = deps.procs.threads(spec.threadsOf ?? []);
  const t0 = performance.now();
  const result = await spec.run();
  const drainSec = await spec.drain();
  const wallSec = (performance.now() - t0) / 1000;
  const cpu = cpuDelta(cpuBefore, deps.procs.cpu());
  const threads = threadDelta(threadsBefore, deps.procs.threads(spec.threadsOf ?? []));
  const units = spec.units(result);
  let jetstream: PhaseFigures["jetstream"];
  if (snapBefore) {
    const cost = diffSnapshots(snapBefore, await deps.monitor.snapshot());
    jetstream = { cost, perUnit: perUnit(cost, units) };
  }
  const phase: PhaseFigures = {
    wallSec: round(wallSec),
    drainSec,
    units,
    unit: spec.unit,
    cpuSec: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, round(v, 3)])),
    ...(Object.keys(threads).length > 0 ? { threadCpuSec: threads } : {}),
    ...(jetstream ? { jetstream } : {}),
  };
  return { ...result, phase };
}

function threadDelta(
  before: ReadonlyMap<string, ReadonlyMap<string, number>>,
  after: ReadonlyMap<string, ReadonlyMap<string, number>>,
): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const [name, kinds] of after) {
    const delta = cpuDelta(before.get(name) ?? new Map(), kinds);
    out[name] = Object.fromEntries(
      Object.entries(delta).map(([kind, sec]) => [kind, round(sec, 3)]),
    );
  }
  return out;
}

export function load(deps: PhaseDeps, spec: LoadSpec) {
  return runChild<LoadResult>(deps, "bench/load.ts", spec, (spec.durationSec + 60) * 1000);
}

export function e2e(deps: PhaseDeps, spec: E2eSpec) {
  return runChild<E2eResult>(deps, "bench/e2e.ts", spec, (spec.timeoutSec + 60) * 1000);
}

/** CPU seconds of a whole system (its processes) in a phase. */
export function systemCpuSec(phase: PhaseFigures | undefined, procs: readonly string[]): number {
  if (!phase) return Number.NaN;
  return procs.reduce((sum, p) => sum + (phase.cpuSec[p] ?? 0), 0);
}

/** Units per CPU-second of a whole system over a phase (drain included). */
export function perCpuSec(phase: PhaseFigures | undefined, procs: readonly string[]): number {
  const sec = systemCpuSec(phase, procs);
  return phase && sec > 0 ? phase.units / sec : Number.NaN;
}

/** CPU µs per unit of a whole system over a phase (drain included). */
export function cpuUsPerUnit(phase: PhaseFigures | undefined, procs: readonly string[]): number {
  const sec = systemCpuSec(phase, procs);
  return phase && phase.units > 0 ? (sec * 1e6) / phase.units : Number.NaN;
}
