/**
 * `bun bench/history.ts bench/results/<run>.json [...]`: makes a run of `npm run bench` the
 * current figures. Writes its summary (the goals with both floors' figures, and the JetStream work
 * per job) between the `latest-run` markers of docs/performance.md, and adds the same summary at
 * the top of docs/history/performance.md, once per run. With several files, the newest is the
 * current one; every one is recorded in the history. The prose around the table is written by
 * hand and is not touched.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { RoundRatios } from "./lib/e2e-rounds.ts";
import { fmtNum, type GoalRow, status } from "./lib/goals.ts";
import type { CostTotals } from "./lib/jetstream.ts";

/** What a summary reads from a results file (bench/run.ts writes a superset of it). */
export interface RecordedRun {
  readonly startedAt: string;
  readonly machine: {
    readonly cores?: unknown;
    readonly cpuModel?: unknown;
    readonly memoryGb?: unknown;
  };
  readonly versions: Readonly<Record<string, string>>;
  readonly settings: {
    readonly rate?: unknown;
    readonly peers?: unknown;
    /** BENCH_E2E_ROUNDS: above 1, each system's e2e figures are its median round. */
    readonly e2eRounds?: unknown;
  };
  readonly scenarios: Readonly<Record<string, unknown>> & {
    readonly e2e?: {
      readonly hub: {
        readonly closed: { readonly phase: PhaseWork };
        readonly rate: { readonly phase: PhaseWork };
      };
      /** The hub ÷ each peer round by round (BENCH_E2E_ROUNDS > 1). */
      readonly byRound?: Readonly<Record<string, RoundRatios>>;
    };
  };
  readonly goals: readonly GoalRow[];
}

/** "median (lowest–highest)" of a list of ratios. */
function spread(values: readonly number[], median: number): string {
  return `${fmtNum(median, 2)} (${fmtNum(Math.min(...values), 2)}–${fmtNum(Math.max(...values), 2)})`;
}

/** The hub ÷ each peer round by round: the medians and ranges, one clause per peer. */
function byRoundLine(byRound: Readonly<Record<string, RoundRatios>> | undefined): string | null {
  const peers = Object.entries(byRound ?? {});
  if (peers.length === 0) return null;
  const clauses = peers.map(
    ([peer, r]) =>
      `${peer}: done/s ${spread(r.donePerSec, r.median.donePerSec)}, jobs per CPU-second ${spread(r.jobsPerCpuSec, r.median.jobsPerCpuSec)}`,
  );
  return `The hub ÷ each peer round by round, median (range): ${clauses.join("; ")}.`;
}

/** The per-job counters a summary reads: the ones every recorded results file has. */
type SummarisedCounters =
  | "stored"
  | "storedStreams"
  | "storedKv"
  | "bytes"
  | "deliveries"
  | "acks"
  | "directGets"
  | "apiCalls";

interface PhaseWork {
  readonly jetstream?: {
    readonly perUnit: Readonly<Pick<Record<keyof CostTotals, number>, SummarisedCounters>>;
  };
}

export const LATEST_START = "<!-- latest-run: start -->";
export const LATEST_END = "<!-- latest-run: end -->";
export const HISTORY_MARK = "<!-- history: generated runs follow, newest first -->";

const runMark = (run: RecordedRun) => `<!-- run: ${run.startedAt} -->`;

/** "2026-11-26T10:12:18.161Z" → "2026-11-26 10:12 UTC". */
export function runTime(startedAt: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(startedAt);
  if (!m) throw new Error(`startedAt is not an ISO timestamp: ${startedAt}`);
  return `${m[1]} ${m[2]} UTC`;
}

function jetstreamLine(label: string, work: PhaseWork | undefined): string | null {
  const u = work?.jetstream?.perUnit;
  if (!u) return null;
  return (
    `${label}: stored ${fmtNum(u.stored, 2)} (${fmtNum(u.storedStreams, 2)} in streams + ` +
    `${fmtNum(u.storedKv, 2)} KV writes), ${fmtNum(u.bytes)} B; deliveries ${fmtNum(u.deliveries, 2)}; ` +
    `acks ${fmtNum(u.acks, 2)}; direct gets ${fmtNum(u.directGets, 2)}; API calls ${fmtNum(u.apiCalls, 2)}.`
  );
}

/** The run's summary: where and how it ran, the goals table, and JetStream's work per job. */
export function summarise(run: RecordedRun, resultsFile: string): string {
  const m = run.machine;
  const v = run.versions;
  const peers = Array.isArray(run.settings.peers) ? run.settings.peers.join(", ") : "none";
  const rounds = Number(run.settings.e2eRounds ?? 1);
  const scenarios =
    Object.keys(run.scenarios)
      .map((name) =>
        name === "e2e" && rounds > 1
          ? `e2e (${rounds} interleaved rounds, each system's median)`
          : name,
      )
      .join(", ") || "none";
  const rows = run.goals.map(
    (g) =>
      `| ${g.goal} ${g.target} | ${g.value} | ${g.floor?.value ?? ""} | ${g.floorSplit?.value ?? ""} | ${g.floorFeed?.value ?? ""} | ${status(g)} |`,
  );
  const e2e = run.scenarios.e2e?.hub;
  const work = [
    jetstreamLine("JetStream work per job, e2e closed loop", e2e?.closed.phase),
    jetstreamLine(`At ${String(run.settings.rate ?? "the open loop's")} jobs/s`, e2e?.rate.phase),
    byRoundLine(run.scenarios.e2e?.byRound),
  ].filter((line): line is string => line !== null);
  return [
    `Run of ${runTime(run.startedAt)}: scenarios ${scenarios}; peers ${peers}; hub ${v.hub ?? "?"}, ` +
      `Bun ${v.bun ?? "?"}, nats-server ${v.nats ?? "?"}; ${String(m.cores ?? "?")} cores ` +
      `(${String(m.cpuModel ?? "?")}), ${String(m.memoryGb ?? "?")} GB; results file \`${resultsFile}\`.`,
    "",
    "| goal | hub | JetStream floor | split floor | feed floor | status |",
    "|---|---|---|---|---|---|",
    ...rows,
    ...(work.length > 0 ? ["", work.join(" ")] : []),
  ].join("\n");
}

/** performance.md with the text between the latest-run markers replaced by the run's summary. */
export function withLatest(performance: string, summary: string): string {
  const start = performance.indexOf(LATEST_START);
  const end = performance.indexOf(LATEST_END);
  if (start === -1 || end < start)
    throw new Error(`performance.md has no ${LATEST_START} … ${LATEST_END} block`);
  return `${performance.slice(0, start + LATEST_START.length)}\n${summary}\n${performance.slice(end)}`;
}

/** The history with the run's entry added right after the marker, unless the run is there already. */
export function withHistoryEntry(history: string, run: RecordedRun, summary: string): string {
  if (history.includes(runMark(run))) return history;
  const at = history.indexOf(HISTORY_MARK);
  if (at === -1) throw new Error(`the history has no ${HISTORY_MARK} line`);
  const entry = `\n\n### ${runTime(run.startedAt)}\n\n${runMark(run)}\n${summary}`;
  const cut = at + HISTORY_MARK.length;
  return `${history.slice(0, cut)}${entry}${history.slice(cut)}`;
}

if (import.meta.main) {
  const root = join(import.meta.dir, "..");
  const files = process.argv.slice(2);
  if (files.length === 0) {
    process.stderr.write("usage: bun bench/history.ts bench/results/<run>.json [...]\n");
    process.exit(2);
  }
  const runs = files
    .map((file) => ({
      file: relative(root, file),
      run: JSON.parse(readFileSync(file, "utf8")) as RecordedRun,
    }))
    .sort((a, b) => a.run.startedAt.localeCompare(b.run.startedAt));
  const performancePath = join(root, "docs/performance.md");
  const historyPath = join(root, "docs/history/performance.md");
  let history = readFileSync(historyPath, "utf8");
  for (const { file, run } of runs) history = withHistoryEntry(history, run, summarise(run, file));
  const newest = runs[runs.length - 1];
  if (newest) {
    const summary = summarise(newest.run, newest.file);
    writeFileSync(performancePath, withLatest(readFileSync(performancePath, "utf8"), summary));
    process.stdout.write(`current figures: ${newest.file}\n`);
  }
  writeFileSync(historyPath, history);
  process.stdout.write(`history: ${runs.length} run(s) recorded\n`);
}
