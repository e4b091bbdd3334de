#!/usr/bin/env bun
/**
 * The hub's CPU per job in this tree against another, in interleaved runs:
 * `bun bench/compare.ts <baseline checkout>`.
 *
 * Each run is `bun bench/run.ts e2e` in its own checkout (its own harness, hub and nats-server),
 * the two trees alternating, the order flipped every pair, so a shared VM's slow spells weigh on
 * both alike. Prints each run's whole-hub µs per job, then per process the medians of both trees
 * and, for the whole hub, the median and range of the pair ratios and the ratio of the medians
 * (docs/performance.md, "Comparing two trees").
 *
 * The baseline checkout needs its node_modules and a harness with the warm-up (BENCH_WARMUP_JOBS):
 * a cold loop against a warm one would compare compilers, not trees.
 *
 * With COMPARE_TOGETHER=1 the two runs of a pair go at the same time instead, each with its own
 * nats-server, hub and load, so whatever the VM does in that minute it does to both. They share
 * the two cores, so each hub's µs per job is higher than alone and only the ratios mean anything;
 * the loops are longer (BENCH_E2E_JOBS 30000) so they overlap despite the two start-ups. Two runs
 * of the same tree this way differed by 0.4–2.2 %, against 1–32 % for consecutive runs alone
 * (docs/performance.md, "Comparing two trees").
 *
 * Env: COMPARE_PAIRS (default 5); COMPARE_TOGETHER (0); BENCH_PEER (none), BENCH_E2E_JOBS (10000,
 * together 30000), BENCH_SETTLE_SEC (5) and BENCH_IDLE_SEC (5) unless set; any other BENCH_*
 * setting goes to both runs as it is.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { ROOT } from "./lib/common.ts";
import { type HubCost, hubCostOf, summarizePairs } from "./lib/compare.ts";

const PAIRS = Number(process.env.COMPARE_PAIRS ?? 5);
const TOGETHER = process.env.COMPARE_TOGETHER === "1";
const tty = process.stderr.isTTY === true;

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

function checkBaseline(path: string | undefined): string {
  if (!path) fail("usage: bun bench/compare.ts <baseline checkout>");
  const root = resolve(path);
  const runScript = join(root, "bench/run.ts");
  if (!existsSync(runScript)) fail(`${root}: no bench/run.ts; give the path of a checkout`);
  if (!existsSync(join(root, "node_modules"))) fail(`${root}: no node_modules; run npm ci there`);
  if (!readFileSync(runScript, "utf8").includes("BENCH_WARMUP_JOBS")) {
    fail(
      `${root}: its harness has no warm-up (BENCH_WARMUP_JOBS), so its loop would be measured cold; give it the warm-up of bench/lib/scenarios.ts e2ePhase first`,
    );
  }
  return root;
}

async function runOnce(root: string): Promise<{ cost: HubCost; warmupJobs?: number }> {
  const env = {
    BENCH_PEER: "none",
    BENCH_E2E_JOBS: TOGETHER ? "30000" : "10000",
    BENCH_SETTLE_SEC: "5",
    BENCH_IDLE_SEC: "5",
    ...process.env,
  };
  const proc = Bun.spawn([process.execPath, "bench/run.ts", "e2e"], {
    cwd: root,
    env,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  const file = /raw figures: (\S+\.json)/.exec(out + err)?.[1];
  if (code !== 0 || !file) {
    throw new Error(`bench in ${root} exited with ${code}:\n${(out + err).slice(-3_000)}`);
  }
  const results = JSON.parse(readFileSync(resolve(root, file), "utf8"));
  return { cost: hubCostOf(results), warmupJobs: results.settings?.warmupJobs };
}

const fmt = (n: number, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits }) : "–";

type Which = "candidate" | "baseline";
type Pair = Record<Which, HubCost>;

/** One pair: the two runs one after the other (the order flipped every pair), or at once. */
async function runPair(
  trees: Record<Which, string>,
  i: number,
  progress: (which: string, done: number) => void,
): Promise<Pair> {
  const report = (which: Which, run: { cost: HubCost }) =>
    process.stdout.write(`${which} ${run.cost.tree}: ${fmt(run.cost.hub)} µs per job\n`);
  let runs: Record<Which, { cost: HubCost; warmupJobs?: number }>;
  if (TOGETHER) {
    progress("both at once", i * 2);
    const [candidate, baseline] = await Promise.all([
      runOnce(trees.candidate),
      runOnce(trees.baseline),
    ]);
    runs = { candidate, baseline };
    report("candidate", candidate);
    report("baseline", baseline);
  } else {
    const order: readonly Which[] =
      i % 2 === 0 ? ["candidate", "baseline"] : ["baseline", "candidate"];
    const done: Partial<typeof runs> = {};
    for (const which of order) {
      progress(which, i * 2 + (which === order[0] ? 0 : 1));
      const run = await runOnce(trees[which]);
      done[which] = run;
      report(which, run);
    }
    runs = done as typeof runs;
  }
  if (runs.candidate.warmupJobs !== runs.baseline.warmupJobs) {
    throw new Error(
      `the two harnesses warmed up differently: ${runs.candidate.warmupJobs}, ${runs.baseline.warmupJobs}`,
    );
  }
  return { candidate: runs.candidate.cost, baseline: runs.baseline.cost };
}

async function main() {
  if (!["0", "1", undefined].includes(process.env.COMPARE_TOGETHER)) {
    fail(`COMPARE_TOGETHER must be 0 or 1; got '${process.env.COMPARE_TOGETHER}'`);
  }
  if (!Number.isInteger(PAIRS) || PAIRS < 1) {
    fail(`COMPARE_PAIRS must be a whole number of at least 1; got '${process.env.COMPARE_PAIRS}'`);
  }
  const baseline = checkBaseline(process.argv[2]);
  const trees = { candidate: ROOT, baseline };
  const pairs: Pair[] = [];
  const started = Date.now();
  const progress = (which: string, done: number) => {
    if (!tty) return;
    const eta =
      done === 0
        ? ""
        : `, about ${fmt((((Date.now() - started) / done) * (PAIRS * 2 - done)) / 60_000, 1)} min left`;
    process.stderr.write(`\rpair ${Math.floor(done / 2) + 1}/${PAIRS}: ${which}${eta}      `);
  };
  for (let i = 0; i < PAIRS; i++) pairs.push(await runPair(trees, i, progress));
  if (tty) process.stderr.write("\n");
  const s = summarizePairs(pairs);
  process.stdout.write("\nµs per job, medians | candidate | baseline | ratio\n");
  const names = [...new Set([...Object.keys(s.candidate), ...Object.keys(s.baseline)])];
  for (const name of names) {
    const c = s.candidate[name] ?? Number.NaN;
    const b = s.baseline[name] ?? Number.NaN;
    process.stdout.write(`${name} | ${fmt(c)} | ${fmt(b)} | ${fmt(c / b, 2)}\n`);
  }
  process.stdout.write(
    `\nwhole hub, candidate ÷ baseline: median of ${s.pairs} pair ratios ${fmt(s.pairRatio.median, 2)} (${fmt(s.pairRatio.min, 2)}–${fmt(s.pairRatio.max, 2)}), ratio of medians ${fmt(s.ratioOfMedians, 2)}\n`,
  );
  if (TOGETHER) {
    process.stdout.write(
      "(each pair ran at once, sharing the cores: the µs per job are above a run alone; the ratios are the figures)\n",
    );
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`compare failed: ${(err as Error).message}\n`);
  process.exit(1);
});
