/**
 * The search index's benchmark (issue 16, section 3), a scenario of its own that runs after every
 * other one, so none of their figures includes it:
 * 1. Does the index keep up with the e2e closed loop, and what does it cost? The same closed loop
 *    in pairs: with the index, then without it (the read models' process, `serve projector
 *    indexer`, restarted with index.enabled false, so its indexer idles, and the `index` durable
 *    removed). Per pair, the hub's CPU per job with ÷ without, and the index's own share: what the
 *    read models' process and nats-server (where its deliveries land) spent more, over the hub's
 *    CPU without; the projector's part of that process is the same work in both. The medians are
 *    the figures: the whole hub's CPU per job moves by up to 35% from one loop to the next on a
 *    shared 2-core machine, more than the index costs.
 * 2. 1,000,000 jobs indexed: list and search queries, p50 and p99 (bench/index.ts, own process).
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type { E2eResult, E2eSpec } from "../e2e.ts";
import { percentile, ROOT, readResultLine, round, spawnChild } from "./common.ts";
import { drainHub } from "./drain.ts";
import { e2e, HUB_PROCS, measurePhase, systemCpuSec } from "./phase.ts";
import type { BenchContext } from "./scenarios.ts";

export interface IndexScenarioDeps {
  /** Restarts the read models' process with the index on or off; resolves once it runs. */
  readonly restartReadModels: (indexEnabled: boolean) => Promise<void>;
  readonly natsUrl: string;
  readonly jobs: number;
  /** On/off pairs of closed loops (BENCH_INDEX_PAIRS, default 3). */
  readonly pairs: number;
  readonly queryJobs: number;
}

interface QueryFigures {
  readonly p50: number;
  readonly p99: number;
  readonly rows: number;
}
type EngineFigures = {
  readonly fillSec: number;
  readonly rowsPerSec: number;
  readonly queries: Record<string, { first: QueryFigures; deep: QueryFigures }>;
};

interface LoopFigures {
  /** The whole hub (nats-server and the service processes). */
  readonly cpuPerJobUs: number;
  /** The processes the index's cost lands in: the read models' process and nats-server. */
  readonly readModelsUs: number;
  readonly natsServerUs: number;
  readonly completedPerSec: number;
  readonly drainSec: number;
}

interface PairFigures {
  readonly withIndex: LoopFigures;
  readonly withoutIndex: LoopFigures;
  /** Whole hub, with ÷ without. */
  readonly cpuRatio: number;
  /** (without + the read models' and nats-server's extra CPU) ÷ without. */
  readonly attributedRatio: number;
}

export interface IndexFigures {
  readonly e2e: {
    readonly jobs: number;
    readonly pairs: readonly PairFigures[];
    /** Medians over the pairs; the goal is ≤ 1.15. */
    readonly cpuRatio: number;
    readonly attributedRatio: number;
  };
  readonly queries?: {
    jobs: number;
    samples: number;
    sqlite?: EngineFigures;
    postgres?: EngineFigures | { skipped: string };
  };
}

async function closedLoop(ctx: BenchContext, label: string, jobs: number) {
  const spec: E2eSpec = {
    base: ctx.hub.base,
    token: ctx.hub.token,
    route: "bench.echo",
    prefix: `index-${randomBytes(4).toString("hex")}`,
    callbackUrl: `${ctx.receiverUrl}/cb`,
    receiverUrl: ctx.receiverUrl,
    jobs,
    concurrency: ctx.settings.connections,
    sampleEvery: 1_000_000,
    pollMs: 10,
    timeoutSec: 600,
  };
  ctx.log(`${label}: e2e closed loop, ${jobs} jobs`);
  const figures = await measurePhase<E2eResult>(ctx, {
    run: () => e2e(ctx, spec),
    drain: () => drainHub(ctx, label, ctx.settings.drainTimeoutSec),
    units: (r) => r.completed,
    unit: "job",
    countJetStream: true,
  });
  const perJobUs = (procs: readonly string[]) =>
    round((systemCpuSec(figures.phase, procs) / Math.max(1, figures.phase.units)) * 1e6, 0);
  return {
    cpuPerJobUs: perJobUs(HUB_PROCS),
    readModelsUs: perJobUs(["read-models"]),
    natsServerUs: perJobUs(["nats-server"]),
    completedPerSec: round(figures.completedPerSec, 0),
    drainSec: figures.phase.drainSec,
  };
}

/** One pair's ratios. */
export function pairRatios(on: LoopFigures, off: LoopFigures): PairFigures {
  const without = Math.max(1, off.cpuPerJobUs);
  const extra = on.readModelsUs - off.readModelsUs + (on.natsServerUs - off.natsServerUs);
  return {
    withIndex: on,
    withoutIndex: off,
    cpuRatio: round(on.cpuPerJobUs / without, 3),
    attributedRatio: round((without + extra) / without, 3),
  };
}

async function dropIndexConsumer(natsUrl: string): Promise<void> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.delete("SWITCHYARD_EVENTS", "index").catch(() => undefined);
  } finally {
    await nc.close();
  }
}

async function queryBench(ctx: BenchContext, jobs: number): Promise<IndexFigures["queries"]> {
  ctx.log(`index queries: ${jobs} jobs indexed (bench/index.ts)`);
  const child = spawnChild(
    "index-bench",
    [ctx.bun, join(ROOT, "bench/index.ts"), JSON.stringify({ jobs, samples: 200 })],
    {
      NODE_ENV: "production",
    },
  );
  return readResultLine<IndexFigures["queries"]>(child, "RESULT", 3_600_000);
}

export async function indexScenario(
  ctx: BenchContext,
  deps: IndexScenarioDeps,
): Promise<IndexFigures> {
  // A loop first that counts for nothing: run alone (`npm run bench -- index`), the first measured
  // loop otherwise met a cold hub (code not compiled yet, buffers and b-trees growing) and cost
  // 35% more than the third (1.35 against 1.06 after the e2e scenario had warmed the hub).
  await closedLoop(ctx, "warm-up", Math.min(deps.jobs, 5_000));
  const pairs: PairFigures[] = [];
  const median = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    );
  for (let n = 1; n <= deps.pairs; n++) {
    if (n > 1) {
      // Back on: the indexer recreates its durable at its own position and catches up.
      await deps.restartReadModels(true);
      await drainHub(ctx, "index catching up", ctx.settings.drainTimeoutSec);
    }
    const on = await closedLoop(ctx, `index on (${n} of ${deps.pairs})`, deps.jobs);
    await deps.restartReadModels(false);
    await dropIndexConsumer(deps.natsUrl);
    const off = await closedLoop(ctx, `index off (${n} of ${deps.pairs})`, deps.jobs);
    pairs.push(pairRatios(on, off));
  }
  // The hub is left as it was found: with its index.
  await deps.restartReadModels(true);
  await drainHub(ctx, "index catching up", ctx.settings.drainTimeoutSec);
  return {
    e2e: {
      jobs: deps.jobs,
      pairs,
      cpuRatio: round(median(pairs.map((p) => p.cpuRatio)), 3),
      attributedRatio: round(median(pairs.map((p) => p.attributedRatio)), 3),
    },
    queries: deps.queryJobs > 0 ? await queryBench(ctx, deps.queryJobs) : undefined,
  };
}

const f = (n: number | undefined) => (n === undefined || !Number.isFinite(n) ? "–" : n.toFixed(1));

/** The report section of the index scenario. */
export function renderIndexReport(figures: IndexFigures): string {
  const lines = ["", "search index (issue 16)", ""];
  const { e2e: loop } = figures;
  const verdict = (ratio: number) => (ratio <= 1.15 ? "met" : "MISSED");
  lines.push(
    `  e2e closed loop, ${loop.jobs} jobs, ${loop.pairs.length} on/off pairs: hub CPU per job with ÷ without, median ${loop.cpuRatio} (goal ≤ 1.15: ${verdict(loop.cpuRatio)}); the index's own share (read models + nats-server), median ${loop.attributedRatio} (${verdict(loop.attributedRatio)})`,
  );
  for (const [n, p] of loop.pairs.entries()) {
    const on = p.withIndex;
    const off = p.withoutIndex;
    lines.push(
      `    pair ${n + 1}: hub ${on.cpuPerJobUs} / ${off.cpuPerJobUs} µs (${p.cpuRatio}); read models ${on.readModelsUs} / ${off.readModelsUs}, nats-server ${on.natsServerUs} / ${off.natsServerUs} (${p.attributedRatio}); ${on.completedPerSec} / ${off.completedPerSec} done/s; drain ${on.drainSec} / ${off.drainSec} s`,
    );
  }
  const q = figures.queries;
  for (const engine of ["sqlite", "postgres"] as const) {
    const e = q?.[engine];
    if (!e) continue;
    if ("skipped" in e) {
      lines.push(`  ${engine}: skipped (${e.skipped})`);
      continue;
    }
    let worst = 0;
    lines.push(
      "",
      `  ${engine}, ${q?.jobs} jobs indexed (filled at ${Math.round(e.rowsPerSec)} rows/s), limit 50, ${q?.samples} samples each: p50 / p99 ms`,
    );
    for (const [name, r] of Object.entries(e.queries)) {
      worst = Math.max(worst, r.first.p99, r.deep.p99);
      lines.push(
        `    ${name.padEnd(28)} first ${f(r.first.p50)} / ${f(r.first.p99)}   deep ${f(r.deep.p50)} / ${f(r.deep.p99)}`,
      );
    }
    lines.push(`    worst p99 ${f(worst)} ms (goal < 50 ms: ${worst < 50 ? "met" : "MISSED"})`);
  }
  return `${lines.join("\n")}\n`;
}
