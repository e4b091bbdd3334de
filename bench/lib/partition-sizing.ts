/**
 * The partitioned sizing model of docs/deploy.md ("Sizing with partitions"): for a planned rate,
 * how many partitions, NATS nodes and replicas of each service, from per-partition capacities
 * measured on the benchmark machine. Pure: figures in, table out (tests/bench/sizing.test.ts).
 *
 * What one partition takes (jobs/s at the planned utilisation of one core):
 * - its read models: each partition is folded by one read-models process at a time (the
 *   projector's and the indexer's leases follow each other onto one process), whose two folds
 *   share its one event loop, so 1,000,000 ÷ the read models' CPU µs per job × utilisation;
 * - its events stream and its view bucket: each is one stream with one leader; nats-server's CPU
 *   per job is split over the streams in proportion to the message operations their counters show
 *   (stores, deliveries, acks, direct gets and pulls of the stream and its consumers), and one
 *   stream's share is taken as bounded by one core (its stores and its consumers' deliveries and
 *   acks go through the stream's lock and its one raft group).
 * The work-queue streams (SWITCHYARD_TASKS, SWITCHYARD_CALLBACKS, SWITCHYARD_DEADLINES) stay
 * single whatever P is, and a job of the builtin routes with a first-try callback never touches
 * them: each one's leader bounds the jobs that pass through it (at least a store, a delivery and an
 * ack each, at nats-server's measured µs per operation), the next limit of every row.
 */
import type { JetStreamCost } from "./jetstream.ts";
import {
  readModelsCpuSec,
  SIZED_SERVICES,
  type SizedService,
  type SizingPlan,
  type StoredPerJob,
  usableCoresPerPod,
} from "./sizing.ts";

/** Where nats-server's work per job goes: a partition's events stream, its view bucket, or a single stream. */
export const STREAM_GROUPS = ["events", "views", "single"] as const;
export type StreamGroup = (typeof STREAM_GROUPS)[number];
/** The work-queue streams, which stay single whatever P is: one leader each for the whole hub. */
export const SINGLE_QUEUES = [
  "SWITCHYARD_TASKS",
  "SWITCHYARD_CALLBACKS",
  "SWITCHYARD_DEADLINES",
] as const;
/** What one job passing through a work queue costs it at least: stored, delivered, acked. */
export const QUEUE_OPS_PER_JOB = 3;

export function streamGroup(stream: string): StreamGroup {
  if (/^SWITCHYARD_EVENTS(_P\d+)?$/.test(stream)) return "events";
  if (/^KV_sy_jobs(_p\d+)?$/.test(stream)) return "views";
  return "single";
}

export interface NatsSplit {
  /** nats-server µs per job by stream group. */
  readonly usPerJob: Record<StreamGroup, number>;
  /** nats-server µs per message operation (store, delivery, ack, direct get, pull). */
  readonly usPerOp: number;
}

/**
 * nats-server µs per job split over the stream groups in proportion to each group's message
 * operations in `cost` (one phase's counters over `jobs` jobs, bench/lib/jetstream.ts).
 */
export function splitNatsCost(
  cost: Pick<JetStreamCost, "streams" | "consumers">,
  natsUsPerJob: number,
  jobs: number,
): NatsSplit {
  const ops: Record<StreamGroup, number> = { events: 0, views: 0, single: 0 };
  for (const [name, s] of Object.entries(cost.streams)) {
    ops[streamGroup(name)] += s.stored + s.directGets;
  }
  for (const [key, c] of Object.entries(cost.consumers)) {
    ops[streamGroup(key.split("/")[0] ?? "")] += c.deliveries + c.acks + c.pulls;
  }
  const total = ops.events + ops.views + ops.single;
  const share = (g: StreamGroup) => (total > 0 ? (natsUsPerJob * ops[g]) / total : 0);
  return {
    usPerJob: { events: share("events"), views: share("views"), single: share("single") },
    usPerOp: total > 0 ? (natsUsPerJob * jobs) / total : Number.NaN,
  };
}

export interface PartitionSizingInputs extends SizingPlan {
  /** CPU µs per job per service, from a closed loop at P > 1. */
  readonly cpuUsPerJob: Readonly<Record<SizedService, number>>;
  /** nats-server CPU µs per job by stream group, and per message operation (splitNatsCost). */
  readonly nats: Readonly<NatsSplit>;
  readonly storedBytesPerJob: StoredPerJob;
  /** Planned CPU of one NATS node. */
  readonly coresPerNatsNode: number;
  /** Stream replicas (R3: each stream's two followers do about half its leader's work). */
  readonly streamReplicas: 1 | 3;
}

export interface Limit {
  readonly what: string;
  readonly jobsPerSec: number;
}

const limitOf = (what: string, us: number, utilisation: number): Limit => ({
  what,
  jobsPerSec: Math.floor((1_000_000 / us) * utilisation),
});

/** Jobs/s one partition's read models, events stream leader and view bucket leader take. */
export function partitionLimits(i: PartitionSizingInputs): Limit[] {
  return [
    limitOf("one partition's read-models fold", i.cpuUsPerJob["read-models"], i.utilisation),
    limitOf("one partition's events stream leader", i.nats.usPerJob.events, i.utilisation),
    limitOf("one partition's view bucket leader", i.nats.usPerJob.views, i.utilisation),
  ];
}

/**
 * Jobs/s of the jobs that pass through it one single work-queue stream's leader takes (NATS-worker
 * and busy HTTP routes through SWITCHYARD_TASKS, retried callbacks through SWITCHYARD_CALLBACKS,
 * deadlines through SWITCHYARD_DEADLINES): the hub's limit for those jobs whatever P is.
 */
export function queueLimit(i: PartitionSizingInputs): Limit {
  return limitOf(
    `one work-queue stream's leader (${SINGLE_QUEUES.join(", ")}: single whatever P is)`,
    QUEUE_OPS_PER_JOB * i.nats.usPerOp,
    i.utilisation,
  );
}

const tightest = (limits: readonly Limit[]): Limit =>
  limits.reduce((a, b) => (b.jobsPerSec < a.jobsPerSec ? b : a));

export interface PartitionSizingRow {
  readonly rate: number;
  readonly partitions: number;
  readonly natsNodes: number;
  readonly replicas: Readonly<Record<SizedService, number>>;
  /** Cores of all NATS nodes together, and of each node with the leaders spread evenly. */
  readonly natsCores: number;
  readonly natsCoresPerNode: number;
  readonly totalCores: number;
  readonly storedBytesPerNode: number;
  /** The tightest per-partition figure, which sets P. */
  readonly partitionLimit: Limit;
  /** The single work queues' leaders: the next limit whatever P is. */
  readonly queueLimit: Limit;
  /** The row's rate even if every job went through one work queue. */
  readonly queuesHold: boolean;
  readonly reason: string;
}

const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

export function sizePartitioned(rate: number, i: PartitionSizingInputs): PartitionSizingRow {
  const coresOf = (us: number) => (rate * us) / 1_000_000 / i.utilisation;
  const replicas = {} as Record<SizedService, number>;
  let serviceCores = 0;
  for (const service of SIZED_SERVICES) {
    const cores = coresOf(i.cpuUsPerJob[service]);
    serviceCores += cores;
    // A read-models replica's partitions share its one event loop: one core each, not its limit.
    replicas[service] = Math.max(2, Math.ceil(cores / usableCoresPerPod(service, i)));
  }
  const natsUs = i.nats.usPerJob.events + i.nats.usPerJob.views + i.nats.usPerJob.single;
  // Each stream's leader does all its work, each of its R - 1 followers about half.
  const natsCores = coresOf(natsUs) * (1 + (i.streamReplicas - 1) / 2);
  const natsNodes = Math.max(i.streamReplicas, Math.ceil(natsCores / i.coresPerNatsNode));
  const partitionLimit = tightest(partitionLimits(i));
  // Every read-models replica folds at least one partition.
  const needed = Math.max(Math.ceil(rate / partitionLimit.jobsPerSec), replicas["read-models"]);
  // A multiple of the node count, so the partitions' leaders spread evenly.
  const partitions = natsNodes * Math.ceil(needed / natsNodes);
  const queue = queueLimit(i);
  const queuesHold = rate <= queue.jobsPerSec;
  const reason = `${fmt(rate / partitions)} jobs/s per partition, within ${partitionLimit.what}'s ${fmt(partitionLimit.jobsPerSec)}; ${
    queuesHold
      ? `even if every job went through one work queue, within its leader's ${fmt(queue.jobsPerSec)}`
      : `next limit: ${queue.what}, about ${fmt(queue.jobsPerSec)} jobs/s of the jobs that pass through each`
  }`;
  const bytesPerJob = i.storedBytesPerJob.events + i.storedBytesPerJob.views;
  return {
    rate,
    partitions,
    natsNodes,
    replicas,
    natsCores,
    natsCoresPerNode: natsCores / natsNodes,
    totalCores: serviceCores + natsCores,
    storedBytesPerNode: (rate * bytesPerJob * i.retentionSec * i.streamReplicas) / natsNodes,
    partitionLimit,
    queueLimit: queue,
    queuesHold,
    reason,
  };
}

export function renderPartitionedSizing(
  rows: readonly PartitionSizingRow[],
  formatBytes: (n: number) => string,
  retentionSec: number,
): string {
  const days = `${Math.round((retentionSec / 86_400) * 10) / 10} d`;
  const lines = [
    `| jobs/s | partitions | NATS nodes (cores each) | ingress | executor | callback | read-models (projector + indexer) | all cores | stored per node over ${days} | holds? |`,
    "|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.rate.toLocaleString("en-US")} | ${r.partitions} | ${r.natsNodes} (${r.natsCoresPerNode.toFixed(1)}) | ${r.replicas.ingress} | ${r.replicas.executor} | ${r.replicas.callback} | ${r.replicas["read-models"]} | ${r.totalCores.toFixed(1)} | ${formatBytes(r.storedBytesPerNode)} | yes: ${r.reason} |`,
    );
  }
  return lines.join("\n");
}

/** The planning choices beyond the single-partition plan (docs/deploy.md says why). */
export interface NatsPlan {
  readonly coresPerNatsNode: number;
  readonly streamReplicas: 1 | 3;
}

export const DEFAULT_NATS_PLAN: NatsPlan = { coresPerNatsNode: 4, streamReplicas: 3 };

/** One P's closed loop of a `BENCH_PARTITIONS` results file (bench/lib/partitions.ts). */
interface PartitionRunShape {
  readonly partitions: number;
  /** Absent from a run that measured idle only (`BENCH_E2E_JOBS=0`). */
  readonly closed?: {
    readonly phase: {
      readonly units: number;
      readonly cpuSec: Readonly<Record<string, number>>;
      readonly jetstream?: { readonly cost: Pick<JetStreamCost, "streams" | "consumers"> };
    };
  };
}

const positive = (value: number | undefined, name: string, what: string): number => {
  if (value === undefined || !Number.isFinite(value) || value <= 0) {
    throw new Error(`the ${what} hold no ${name} figure`);
  }
  return value;
};

/**
 * The per-partition inputs from one P's e2e closed loop of a partitions run (the largest P when
 * `partitions` is not given): CPU µs per job of each service, nats-server's µs per job split by
 * stream group, and the bytes every partition's events streams and view buckets grew by.
 */
export function partitionInputsFromRun(
  runs: readonly PartitionRunShape[],
  plan: SizingPlan & NatsPlan,
  partitions?: number,
): PartitionSizingInputs {
  const loops = runs.filter((r) => r.closed !== undefined);
  const run =
    partitions === undefined
      ? [...loops].sort((a, b) => b.partitions - a.partitions)[0]
      : loops.find((r) => r.partitions === partitions);
  if (!run?.closed)
    throw new Error(
      `the results hold no partitions run${partitions ? ` at P = ${partitions}` : ""} with an e2e closed loop`,
    );
  const { phase } = run.closed;
  const what = `results at P = ${run.partitions}`;
  const perJob = (sec: number | undefined) => ((sec ?? Number.NaN) * 1_000_000) / phase.units;
  // readModelsCpuSec: a run of the read models apart counts as their sum.
  const cpuSec: Readonly<Record<string, number | undefined>> = {
    ...phase.cpuSec,
    "read-models": readModelsCpuSec(phase.cpuSec),
  };
  const cpu = {} as Record<SizedService, number>;
  for (const svc of SIZED_SERVICES) cpu[svc] = positive(perJob(cpuSec[svc]), svc, what);
  const nats = positive(perJob(phase.cpuSec["nats-server"]), "nats-server", what);
  const cost = phase.jetstream?.cost;
  if (!cost) throw new Error(`the ${what} hold no JetStream counters`);
  const bytes = (group: StreamGroup) =>
    Object.entries(cost.streams)
      .filter(([name]) => streamGroup(name) === group)
      .reduce((sum, [, s]) => sum + s.bytes, 0) / phase.units;
  return {
    ...plan,
    cpuUsPerJob: cpu,
    nats: splitNatsCost(cost, nats, phase.units),
    storedBytesPerJob: {
      events: positive(bytes("events"), "events", what),
      views: positive(bytes("views"), "views", what),
    },
  };
}

/** The per-partition inputs kept in bench/sizing-inputs.json (`partitioned`), each checked. */
export function partitionInputsFromFixture(
  fixture: unknown,
  plan: SizingPlan & NatsPlan,
): PartitionSizingInputs {
  const root = ((fixture ?? {}) as { partitioned?: Record<string, Record<string, unknown>> })
    .partitioned;
  const what = "sizing inputs' partitioned figures";
  const num = (group: string, name: string) => {
    const v = root?.[group]?.[name];
    return positive(typeof v === "number" ? v : undefined, name, what);
  };
  const cpu = {} as Record<SizedService, number>;
  for (const svc of SIZED_SERVICES) cpu[svc] = num("cpuUsPerJob", svc);
  const nats: NatsSplit = {
    usPerJob: {
      events: num("natsUsPerJob", "events"),
      views: num("natsUsPerJob", "views"),
      single: num("natsUsPerJob", "single"),
    },
    usPerOp: num("natsUsPerJob", "perOperation"),
  };
  return {
    ...plan,
    cpuUsPerJob: cpu,
    nats,
    storedBytesPerJob: {
      events: num("storedBytesPerJob", "events"),
      views: num("storedBytesPerJob", "views"),
    },
  };
}
