/**
 * The arithmetic of `bench/compare.ts`: a hub's CPU per job by process from one results file, and
 * the medians and pair ratios of interleaved runs of two trees. Pure, so it is unit-tested.
 */

/** What compare reads of a results file (bench/run.ts writes it). */
export interface ComparedResults {
  readonly versions?: { readonly hub?: string };
  readonly settings?: { readonly warmupJobs?: number; readonly e2eJobs?: number };
  readonly systems?: { readonly hub?: readonly string[] };
  readonly scenarios?: {
    readonly e2e?: {
      readonly hub: {
        readonly closed: {
          readonly phase: { readonly units: number; readonly cpuSec: Record<string, number> };
        };
      };
    };
  };
}

/** µs of CPU per job of the hub's e2e closed loop: each hub process and their sum. */
export interface HubCost {
  readonly tree: string;
  readonly perProcess: Readonly<Record<string, number>>;
  readonly hub: number;
}

/** The hub's processes in results written before `systems` named them. */
const OLD_HUB_PROCESSES = [
  "nats-server",
  "ingress",
  "projector",
  "indexer",
  "read-models",
  "executor",
  "callback",
];

export function hubCostOf(results: ComparedResults): HubCost {
  const phase = results.scenarios?.e2e?.hub.closed.phase;
  if (!phase || phase.units === 0) {
    throw new Error("the results file has no e2e closed loop of the hub with completed jobs");
  }
  const names = results.systems?.hub ?? OLD_HUB_PROCESSES;
  const perProcess: Record<string, number> = {};
  let hub = 0;
  for (const name of names) {
    const sec = phase.cpuSec[name];
    if (sec === undefined) continue;
    perProcess[name] = (sec * 1e6) / phase.units;
    hub += perProcess[name];
  }
  return { tree: results.versions?.hub ?? "?", perProcess, hub };
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

export interface ComparisonSummary {
  readonly pairs: number;
  /** Median µs per job per process, and of the whole hub, for each tree. */
  readonly candidate: Readonly<Record<string, number>>;
  readonly baseline: Readonly<Record<string, number>>;
  /** candidate ÷ baseline of each pair's whole hub: median, lowest, highest. */
  readonly pairRatio: { readonly median: number; readonly min: number; readonly max: number };
  /** Median of the candidate's whole hub ÷ median of the baseline's. */
  readonly ratioOfMedians: number;
}

function medians(costs: readonly HubCost[]): Record<string, number> {
  const names = [...new Set(costs.flatMap((c) => Object.keys(c.perProcess)))];
  const out: Record<string, number> = {};
  for (const name of names) {
    out[name] = median(costs.map((c) => c.perProcess[name]).filter((v) => v !== undefined));
  }
  out["whole hub"] = median(costs.map((c) => c.hub));
  return out;
}

/** Pairs of (candidate, baseline) runs, each pair run back to back. */
export function summarizePairs(
  pairs: readonly { readonly candidate: HubCost; readonly baseline: HubCost }[],
): ComparisonSummary {
  if (pairs.length === 0) throw new Error("no pairs to compare");
  const ratios = pairs.map((p) => p.candidate.hub / p.baseline.hub);
  const candidate = medians(pairs.map((p) => p.candidate));
  const baseline = medians(pairs.map((p) => p.baseline));
  return {
    pairs: pairs.length,
    candidate,
    baseline,
    pairRatio: { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) },
    ratioOfMedians: (candidate["whole hub"] as number) / (baseline["whole hub"] as number),
  };
}
