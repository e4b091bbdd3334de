/**
 * Where a job's time goes between POST /run and its callback, stage by stage, measured for a
 * sample of one e2e loop's jobs from four clocks on one machine:
 *
 * - the driver's stamps (bench/e2e.ts `stampEvery`): when the POST started and when its 202 was read;
 * - each event's `occurred_at` (the writing service's clock when it built the event: run.requested
 *   in the ingress, job.done in the executor, callback.delivered in the callback service after the
 *   attempt, whose `duration_ms` gives the attempt's start);
 * - the time nats-server stored each event (the stream's per-message timestamp);
 * - the receiver's arrival time of the callback (bench/receiver.ts /stats).
 *
 * Every clock is the machine's wall clock; occurred_at has millisecond resolution.
 *
 * Usage: `npm run bench -- e2e` computes it for the hub's closed loop and its 500/s loop (one job
 * in BENCH_STAMP_EVERY, default 10), prints the table and keeps it in the results file as
 * `scenarios.e2e.hub.<closed|rate>.stages`. From code: `latencyStages({ natsUrl, stream, clientId,
 * stamps, arrivals })` after the loop has drained.
 */
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { decodeEvent } from "../shared/bus/index.ts";
import { SINGLE_PARTITION_LAYOUT } from "../shared/jobs/index.ts";
import { round, summarize } from "./lib/common.ts";

export interface StagesInput {
  readonly natsUrl: string;
  /** The events stream of a single-partition hub, and the jobs' client. */
  readonly stream: string;
  readonly clientId: string;
  /** job_id → [POST started, 202 read], ms. */
  readonly stamps: Readonly<Record<string, readonly [number, number]>>;
  /** job_id → callback arrival at the receiver, ms. */
  readonly arrivals: Readonly<Record<string, number>>;
}

export interface StageFigure {
  readonly stage: string;
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
}

/** What the events say about one job, ms. */
interface JobTimes {
  runBuilt?: number;
  runStored?: number;
  doneBuilt?: number;
  doneStored?: number;
  attemptStart?: number;
}

const STAGES: readonly {
  readonly stage: string;
  readonly from: (t: Required<JobTimes> & Stamped) => number;
  readonly to: (t: Required<JobTimes> & Stamped) => number;
}[] = [
  {
    stage: "POST sent → run.requested built (HTTP, ingress)",
    from: (t) => t.submit,
    to: (t) => t.runBuilt,
  },
  {
    stage: "run.requested built → stored (publish)",
    from: (t) => t.runBuilt,
    to: (t) => t.runStored,
  },
  {
    stage: "run.requested stored → 202 read by the driver",
    from: (t) => t.runStored,
    to: (t) => t.accepted,
  },
  {
    stage: "run.requested stored → job.done built (executor wait + echo)",
    from: (t) => t.runStored,
    to: (t) => t.doneBuilt,
  },
  { stage: "job.done built → stored (publish)", from: (t) => t.doneBuilt, to: (t) => t.doneStored },
  {
    stage: "job.done stored → callback attempt starts",
    from: (t) => t.doneStored,
    to: (t) => t.attemptStart,
  },
  {
    stage: "callback attempt starts → receiver",
    from: (t) => t.attemptStart,
    to: (t) => t.arrival,
  },
  { stage: "202 read → callback at the receiver", from: (t) => t.accepted, to: (t) => t.arrival },
  {
    stage: "total: POST sent → callback at the receiver",
    from: (t) => t.submit,
    to: (t) => t.arrival,
  },
];

interface Stamped {
  readonly submit: number;
  readonly accepted: number;
  readonly arrival: number;
}

/** Reads the sampled jobs' last event on each of their subjects (direct reads, no consumer). */
async function readEventTimes(input: StagesInput): Promise<Map<string, JobTimes>> {
  const times = new Map<string, JobTimes>();
  const nc = await connect({ servers: input.natsUrl, name: "latency-stages" });
  try {
    const jsm = await jetstreamManager(nc);
    const ids = Object.keys(input.stamps);
    let next = 0;
    const reader = async () => {
      while (next < ids.length) {
        const jobId = ids[next++] as string;
        const t: JobTimes = {};
        for (const kind of ["run", "job", "cb"] as const) {
          const subject = SINGLE_PARTITION_LAYOUT.subject(
            { client_id: input.clientId, job_id: jobId },
            kind,
          );
          const stored = await jsm.streams.getMessage(input.stream, { last_by_subj: subject });
          if (stored) record(t, stored.data, stored.time.getTime());
        }
        times.set(jobId, t);
      }
    };
    await Promise.all(Array.from({ length: 16 }, reader));
  } finally {
    await nc.close();
  }
  return times;
}

function record(t: JobTimes, data: Uint8Array, storedMs: number): void {
  const event = decodeEvent(data);
  const built = Date.parse(event.occurred_at);
  if (event.type === "run.requested") {
    t.runBuilt = built;
    t.runStored = storedMs;
  } else if (event.type === "job.done") {
    t.doneBuilt = built;
    t.doneStored = storedMs;
  } else if (event.type === "callback.delivered" && event.data.attempts === 1) {
    t.attemptStart = built - (event.data.duration_ms ?? 0);
  }
}

/** Per-stage p50 / p99 / mean (ms) over the sampled jobs that went straight through. */
export async function latencyStages(input: StagesInput): Promise<StageFigure[]> {
  const events = await readEventTimes(input);
  const complete: (Required<JobTimes> & Stamped)[] = [];
  for (const [jobId, t] of events) {
    const stamp = input.stamps[jobId];
    const arrival = input.arrivals[jobId];
    if (!stamp || arrival === undefined) continue;
    if (Object.keys(t).length < 5) continue;
    complete.push({ ...(t as Required<JobTimes>), submit: stamp[0], accepted: stamp[1], arrival });
  }
  return STAGES.map(({ stage, from, to }) => {
    const spans = complete.map((t) => to(t) - from(t));
    const s = summarize(spans);
    const mean = spans.length ? spans.reduce((a, b) => a + b, 0) / spans.length : 0;
    return { stage, n: s.n, p50: s.p50, p99: s.p99, mean: round(mean) };
  });
}

/** The stage table as markdown rows. */
export function stageTable(figures: readonly StageFigure[]): string {
  const rows = figures.map(
    (f) => `| ${f.stage} | ${f.p50.toFixed(1)} | ${f.p99.toFixed(1)} | ${f.mean.toFixed(1)} |`,
  );
  return [
    `| stage (${figures[0]?.n ?? 0} jobs) | p50 ms | p99 ms | mean ms |`,
    "|---|---|---|---|",
    ...rows,
  ].join("\n");
}
