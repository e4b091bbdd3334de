/**
 * The e2e scenario in interleaved rounds (`BENCH_E2E_ROUNDS=N`, N > 1): every system's closed
 * loop N times, the systems taking turns and the order reversed each round, then each system's
 * open loop once. A shared 2-core VM changes pace within a run (one system's CPU per job moved by
 * up to a third between consecutive runs, docs/performance.md), and with one loop each, the hub
 * first, such a change lands on whichever system ran then. Each system's figures are those of its
 * median round by CPU per job, so done/s, CPU, latencies and JetStream counts all come from one
 * loop; every round's CPU per job is kept beside them. Beside each peer, the hub's ratios to it
 * round by round (`byRound`): the two loops of a round ran minutes apart at most, so a pace change
 * between rounds moves both.
 */
import { median } from "./compare.ts";
import type { Peer } from "./peers.ts";
import { cpuUsPerUnit, HUB_PROCS, type PhaseFigures } from "./phase.ts";
import { type BenchContext, type E2eFigures, e2ePhase, type PerPeer, ratios } from "./scenarios.ts";

/**
 * The run whose CPU per unit of `procs` is the median of `runs` (the lower middle for an even
 * count), and every run's figure in the order given.
 */
export function medianRun<T extends { readonly phase: PhaseFigures }>(
  runs: readonly T[],
  procs: readonly string[],
): { readonly median: T; readonly cpuUsPerUnit: readonly number[] } {
  if (runs.length === 0) throw new Error("medianRun needs at least one run");
  const cpu = runs.map((r) => cpuUsPerUnit(r.phase, procs));
  const order = runs.map((_, i) => i).sort((a, b) => (cpu[a] as number) - (cpu[b] as number));
  const middle = order[Math.floor((order.length - 1) / 2)] as number;
  return { median: runs[middle] as T, cpuUsPerUnit: cpu.map((c) => Math.round(c)) };
}

/** A closed loop as the ratios read it: its rate and what its system spent. */
interface RoundLoop {
  readonly completedPerSec: number;
  readonly phase: PhaseFigures;
}

/** The hub ÷ a peer in each round, in round order, and the median of each. */
export interface RoundRatios {
  readonly donePerSec: readonly number[];
  readonly jobsPerCpuSec: readonly number[];
  readonly median: { readonly donePerSec: number; readonly jobsPerCpuSec: number };
}

/**
 * The hub's ratios to a peer round by round: done/s, hub ÷ peer, and jobs per CPU-second (the
 * peer's CPU per job ÷ the hub's, each over its own processes). Round i of one is paired with
 * round i of the other; rounds only one of them ran are left out.
 */
export function roundRatios(
  hub: { readonly loops: readonly RoundLoop[]; readonly procs: readonly string[] },
  peer: { readonly loops: readonly RoundLoop[]; readonly procs: readonly string[] },
): RoundRatios {
  const rounds = Math.min(hub.loops.length, peer.loops.length);
  const donePerSec: number[] = [];
  const jobsPerCpuSec: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const h = hub.loops[i] as RoundLoop;
    const p = peer.loops[i] as RoundLoop;
    donePerSec.push(h.completedPerSec / p.completedPerSec);
    jobsPerCpuSec.push(cpuUsPerUnit(p.phase, peer.procs) / cpuUsPerUnit(h.phase, hub.procs));
  }
  return {
    donePerSec,
    jobsPerCpuSec,
    median: { donePerSec: median(donePerSec), jobsPerCpuSec: median(jobsPerCpuSec) },
  };
}

/** A system's figures with the CPU per job of each of its closed-loop rounds. */
type RoundsFigures = {
  readonly closed: E2eFigures;
  readonly rate: E2eFigures;
  readonly closedRoundsCpuUsPerJob: readonly number[];
  /** Each process's CPU per job in each closed-loop round, in round order. */
  readonly closedRoundsCpuUsPerJobByProc: Readonly<Record<string, readonly number[]>>;
};

/**
 * Each process's CPU µs per job in each run, in the order given: where a system's median round
 * hides which process moved between rounds (nats-server's share moved most on a slow VM).
 */
export function cpuByProcess(
  runs: readonly { readonly phase: PhaseFigures }[],
  procs: readonly string[],
): Record<string, number[]> {
  return Object.fromEntries(
    procs.map((p) => [p, runs.map((r) => Math.round(cpuUsPerUnit(r.phase, [p])))]),
  );
}

export async function e2eRoundsScenario(ctx: BenchContext, rounds: number) {
  const systems: ReadonlyArray<"hub" | Peer> = ["hub", ...ctx.peers];
  const closed = new Map<"hub" | Peer, E2eFigures[]>(systems.map((who) => [who, []]));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? systems : [...systems].reverse();
    ctx.log(`e2e round ${round + 1} of ${rounds}: ${order.map(nameOf).join(", ")}`);
    for (const who of order) {
      const figures = await e2ePhase(ctx, who, "closed", { warm: round === 0 });
      closed.get(who)?.push(figures);
    }
  }
  const settle = async (who: "hub" | Peer): Promise<RoundsFigures> => {
    const procs = who === "hub" ? HUB_PROCS : who.procs;
    const loops = closed.get(who) ?? [];
    const { median, cpuUsPerUnit } = medianRun(loops, procs);
    const byProc = cpuByProcess(loops, procs);
    const perProc = Object.entries(byProc).map(([p, us]) => `${p} ${us.join("/")}`);
    ctx.log(
      `e2e ${nameOf(who)} closed loops, CPU µs per job by round: ${cpuUsPerUnit.join(", ")} (${perProc.join("; ")})`,
    );
    return {
      closed: median,
      rate: await e2ePhase(ctx, who, "rate"),
      closedRoundsCpuUsPerJob: cpuUsPerUnit,
      closedRoundsCpuUsPerJobByProc: byProc,
    };
  };
  const hub = await settle("hub");
  const peers: PerPeer<RoundsFigures> = {};
  const byRound: PerPeer<RoundRatios> = {};
  for (const peer of ctx.peers) {
    peers[peer.name] = await settle(peer);
    const paired = roundRatios(
      { loops: closed.get("hub") ?? [], procs: HUB_PROCS },
      { loops: closed.get(peer) ?? [], procs: peer.procs },
    );
    byRound[peer.name] = paired;
    const list = (xs: readonly number[]) => xs.map((x) => x.toFixed(2)).join(", ");
    ctx.log(
      `e2e hub ÷ ${peer.name} by round: done/s ${list(paired.donePerSec)} (median ${paired.median.donePerSec.toFixed(2)}); jobs per CPU-s ${list(paired.jobsPerCpuSec)} (median ${paired.median.jobsPerCpuSec.toFixed(2)})`,
    );
  }
  return {
    hub,
    peers,
    ratioToPeer: ratios(hub.closed.completedPerSec, peers, (p) => p.closed.completedPerSec),
    byRound,
  };
}

const nameOf = (who: "hub" | Peer) => (who === "hub" ? "hub" : who.name);
