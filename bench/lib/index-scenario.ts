/**
 * The search index's benchmark (issue 16, section 3), a scenario of its own that runs after every
 * other one, so none of their figures includes it:
 * 1. Does the index keep up with the e2e closed loop, and what does it cost? The same closed loop
 *    with the indexer running (in the projector process), without it (the projector restarted
 *    with index.enabled false and the `index` durable removed), and with it again; the hub's CPU
 *    per job with (mean of the two) and without, and whether the index drained with the rest.
 * 2. 1,000,000 jobs indexed: list and search queries, p50 and p99 (bench/index.ts, own process).
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import type { E2eResult, E2eSpec } from "../e2e.ts";
import { ROOT, readResultLine, round, spawnChild } from "./common.ts";
import { drainHub } from "./drain.ts";
import { e2e, HUB_PROCS, measurePhase, systemCpuSec } from "./phase.ts";
import type { BenchContext } from "./scenarios.ts";

export interface IndexScenarioDeps {
  /** Restarts the projector service with the index on or off; resolves once it consumes. */
  readonly restartProjector: (indexEnabled: boolean) => Promise<void>;
  readonly natsUrl: string;
  readonly jobs: number;
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

export interface IndexFigures {
  readonly e2e: {
    readonly jobs: number;
    readonly withIndex: { cpuPerJobUs: number; completedPerSec: number; drainSec: number };
    readonly withoutIndex: { cpuPerJobUs: number; completedPerSec: number; drainSec: number };
    /** with ÷ without: the goal is ≤ 1.15. */
    readonly cpuRatio: number;
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
  return {
    cpuPerJobUs: round(
      (systemCpuSec(figures.phase, HUB_PROCS) / Math.max(1, figures.phase.units)) * 1e6,
      0,
    ),
    completedPerSec: round(figures.completedPerSec, 0),
    drainSec: figures.phase.drainSec,
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
  // On, off, on: the mean of the two runs with the index against the one between them, so a
  // drift of the (shared) machine over the scenario does not land on one side.
  const first = await closedLoop(ctx, "index on (1 of 2)", deps.jobs);
  await deps.restartProjector(false);
  await dropIndexConsumer(deps.natsUrl);
  const withoutIndex = await closedLoop(ctx, "index off", deps.jobs);
  // Back on: the indexer recreates its durable at its own position and catches up.
  await deps.restartProjector(true);
  await drainHub(ctx, "index catching up", ctx.settings.drainTimeoutSec);
  const second = await closedLoop(ctx, "index on (2 of 2)", deps.jobs);
  const withIndex = {
    cpuPerJobUs: round((first.cpuPerJobUs + second.cpuPerJobUs) / 2, 0),
    completedPerSec: round((first.completedPerSec + second.completedPerSec) / 2, 0),
    drainSec: Math.max(first.drainSec, second.drainSec),
  };
  return {
    e2e: {
      jobs: deps.jobs,
      withIndex,
      withoutIndex,
      cpuRatio: round(withIndex.cpuPerJobUs / Math.max(1, withoutIndex.cpuPerJobUs), 3),
    },
    queries: deps.queryJobs > 0 ? await queryBench(ctx, deps.queryJobs) : undefined,
  };
}

const f = (n: number | undefined) => (n === undefined || !Number.isFinite(n) ? "–" : n.toFixed(1));

/** The report section of the index scenario. */
export function renderIndexReport(figures: IndexFigures): string {
  const lines = ["", "search index (issue 16)", ""];
  const { e2e: loop } = figures;
  lines.push(
    `  e2e closed loop, ${loop.jobs} jobs: hub CPU per job ${loop.withIndex.cpuPerJobUs} µs with the index, ${loop.withoutIndex.cpuPerJobUs} µs without: ratio ${loop.cpuRatio} (goal ≤ 1.15: ${loop.cpuRatio <= 1.15 ? "met" : "MISSED"})`,
    `  completed/s ${loop.withIndex.completedPerSec} with, ${loop.withoutIndex.completedPerSec} without; drain after the loop ${loop.withIndex.drainSec} s with the index (it drains with every other consumer)`,
  );
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
