/**
 * The e2e scenario in interleaved rounds (`BENCH_E2E_ROUNDS=N`, N > 1): every system's closed
 * loop N times, the systems taking turns and the order reversed each round, then each system's
 * open loop once. A shared 2-core VM changes pace within a run (one system's CPU per job moved by
 * up to a third between consecutive runs, docs/performance.md), and with one loop each, the hub
 * first, such a change lands on whichever system ran then. Each system's figures are those of its
 * median round by CPU per job, so done/s, CPU, latencies and JetStream counts all come from one
 * loop; every round's CPU per job is kept beside them.
 */
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

/** A system's figures with the CPU per job of each of its closed-loop rounds. */
type RoundsFigures = {
  readonly closed: E2eFigures;
  readonly rate: E2eFigures;
  readonly closedRoundsCpuUsPerJob: readonly number[];
};

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
    const { median, cpuUsPerUnit } = medianRun(
      closed.get(who) ?? [],
      who === "hub" ? HUB_PROCS : who.procs,
    );
    ctx.log(`e2e ${nameOf(who)} closed loops, CPU µs per job by round: ${cpuUsPerUnit.join(", ")}`);
    return {
      closed: median,
      rate: await e2ePhase(ctx, who, "rate"),
      closedRoundsCpuUsPerJob: cpuUsPerUnit,
    };
  };
  const hub = await settle("hub");
  const peers: PerPeer<RoundsFigures> = {};
  for (const peer of ctx.peers) peers[peer.name] = await settle(peer);
  return {
    hub,
    peers,
    ratioToPeer: ratios(hub.closed.completedPerSec, peers, (p) => p.closed.completedPerSec),
  };
}

const nameOf = (who: "hub" | Peer) => (who === "hub" ? "hub" : who.name);
