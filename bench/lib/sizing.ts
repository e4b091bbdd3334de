/**
 * The sizing model of docs/deploy.md ("Sizing past one machine") for one partition (P = 1),
 * computed from a benchmark run's measured CPU and stored bytes per job; the partitioned model is
 * bench/lib/partition-sizing.ts. Pure: figures in, table out (tests/bench/sizing.test.ts).
 * The figures the documented table uses are kept in bench/sizing-inputs.json (bench/results is
 * not in the repository).
 *
 *   cores(service) = rate × CPU µs per job(service) ÷ 1,000,000 ÷ utilisation
 *   replicas(service) = ceil(cores ÷ CPU per pod), at least 2 (no single point of failure)
 *   stored per NATS node = rate × stored bytes per job × retention (nats.events_max_age)
 *
 * Exceptions the formula must not hide:
 * - the read models (the projector and the indexer in one process, `switchyard serve projector
 *   indexer`, deploy/k8s/base/deployment-read-models.yaml) fold a partition on one active
 *   replica: both claims follow each other onto one process, whose two folds share its one event
 *   loop, so their cores together cannot exceed one core: past `foldLimit` jobs/s one partition
 *   stops holding (more partitions: `nats.partitions`, the partitioned model);
 * - every event goes through the SWITCHYARD_EVENTS stream's leader: that node's cores are the
 *   measured nats-server CPU per job (the leader does the writes, the deliveries and the acks),
 *   the two followers need about half of that (they only store the replicated writes);
 * - storage is per node whatever the replication: an R1 server holds every byte, and so does each
 *   of an R3 cluster's three nodes (the cluster stores three times as much).
 */

export const SIZED_SERVICES = ["ingress", "executor", "callback", "read-models"] as const;
export type SizedService = (typeof SIZED_SERVICES)[number];
const MEASURED_PROCS = [...SIZED_SERVICES, "nats-server"] as const;
/**
 * Cores one read-models process can give its folds whatever its CPU limit: the projector's and
 * the indexer's folds run on its one JavaScript thread.
 */
export const FOLD_CORES_PER_PROCESS = 1;

/** Cores of one pod that count for `service`'s work: its CPU limit, one core for the folds. */
export function usableCoresPerPod(service: SizedService, plan: SizingPlan): number {
  const limit = plan.coresPerPod[service];
  return service === "read-models" ? Math.min(limit, FOLD_CORES_PER_PROCESS) : limit;
}

/** What a job leaves in JetStream for the whole retention window. */
export interface StoredPerJob {
  /** The job's events (SWITCHYARD_EVENTS: run.requested, job.done, callback.delivered). */
  readonly events: number;
  /** The job's view (KV sy_jobs, one revision kept, expiring with the events). */
  readonly views: number;
}

/** The planning choices: not measured, chosen (docs/deploy.md says why). */
export interface SizingPlan {
  /** Share of a core to plan for (headroom for bursts and GC), e.g. 0.6. */
  readonly utilisation: number;
  /** CPU limit of one pod of a hub service (the manifests: 1 core; ingress and read-models 2). */
  readonly coresPerPod: Readonly<Record<SizedService, number>>;
  /** How long a job's events and view are kept (config nats.events_max_age), in seconds. */
  readonly retentionSec: number;
}

export interface SizingInputs extends SizingPlan {
  /** CPU µs per completed job, measured per process in the closed loop. */
  readonly cpuUsPerJob: Readonly<Record<SizedService | "nats-server", number>>;
  /** Bytes JetStream stores per job (its `state.bytes` growth), per replica. */
  readonly storedBytesPerJob: StoredPerJob;
}

/**
 * The plan docs/deploy.md's table uses: 60% busy, the manifests' CPU limits (ingress: the prod
 * overlay's; read-models: deployment-read-models.yaml's), 30 days.
 */
export const DEFAULT_PLAN: SizingPlan = {
  utilisation: 0.6,
  coresPerPod: { ingress: 2, executor: 1, callback: 1, "read-models": 2 },
  retentionSec: 30 * 86_400,
};

export interface SizingRow {
  readonly rate: number;
  readonly replicas: Readonly<Record<SizedService, number>>;
  /** Cores of the stream leader's NATS node, and of each follower (R3). */
  readonly natsLeaderCores: number;
  readonly natsFollowerCores: number;
  /** Cores the whole hub needs (services and three NATS nodes). */
  readonly totalCores: number;
  /** Bytes one NATS node stores per day (the R1 server, or each R3 node). */
  readonly storedBytesPerDayPerNode: number;
  /** Bytes one NATS node holds over the retention window: its disk, before headroom. */
  readonly storedBytesPerNode: number;
  /** Messages held over the retention window (3 events and one view per job), each on its own subject. */
  readonly retainedMessages: number;
  /** Why this rate is past what the model covers; undefined when it holds. */
  readonly beyond?: string;
}

/** Events a job stores (`.run`, `.job`, `.cb` subjects) plus its one view key. */
const MESSAGES_PER_JOB = 3 + 1;

/**
 * Jobs per second one active read-models process folds at the planned utilisation of its one
 * core: the projector's and the indexer's work per job together, since they share its event loop.
 */
export function foldLimit(inputs: SizingInputs): number {
  const us = inputs.cpuUsPerJob["read-models"];
  return Math.floor((1_000_000 / us) * FOLD_CORES_PER_PROCESS * inputs.utilisation);
}

export function sizeFor(rate: number, inputs: SizingInputs): SizingRow {
  const coresOf = (us: number) => (rate * us) / 1_000_000 / inputs.utilisation;
  const replicas = {} as Record<SizedService, number>;
  let serviceCores = 0;
  for (const service of SIZED_SERVICES) {
    const cores = coresOf(inputs.cpuUsPerJob[service]);
    serviceCores += cores;
    // At P = 1 the read models are active/standby: one folds, one waits; more only wait.
    replicas[service] =
      service === "read-models" ? 2 : Math.max(2, Math.ceil(cores / inputs.coresPerPod[service]));
  }
  const natsLeaderCores = coresOf(inputs.cpuUsPerJob["nats-server"]);
  const natsFollowerCores = natsLeaderCores / 2;
  const bytesPerJob = inputs.storedBytesPerJob.events + inputs.storedBytesPerJob.views;
  const limit = foldLimit(inputs);
  const beyond =
    rate > limit
      ? `one active read-models process folds at most about ${limit.toLocaleString("en-US")} jobs/s: more partitions (below)`
      : undefined;
  return {
    rate,
    replicas,
    natsLeaderCores,
    natsFollowerCores,
    totalCores: serviceCores + natsLeaderCores + 2 * natsFollowerCores,
    storedBytesPerDayPerNode: rate * bytesPerJob * 86_400,
    storedBytesPerNode: rate * bytesPerJob * inputs.retentionSec,
    retainedMessages: rate * MESSAGES_PER_JOB * inputs.retentionSec,
    ...(beyond ? { beyond } : {}),
  };
}

type Figures = Readonly<Record<string, unknown>>;

/** A positive finite number at `figures[name]`, or an error naming what is missing. */
function figure(figures: Figures | undefined, name: string, what: string): number {
  const value = figures?.[name];
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new Error(`the ${what} hold no ${name} figure`);
  }
  return value;
}

/**
 * The inputs of bench/sizing-inputs.json: `cpuUsPerJob` per process and `storedBytesPerJob`
 * (events, views), each with a `source` saying which run they come from.
 */
export function inputsFromFixture(fixture: unknown, plan: SizingPlan): SizingInputs {
  return checked(fixture, plan, "sizing inputs");
}

function checked(figures: unknown, plan: SizingPlan, what: string): SizingInputs {
  const root = (figures ?? {}) as { cpuUsPerJob?: Figures; storedBytesPerJob?: Figures };
  const cpu = {} as Record<(typeof MEASURED_PROCS)[number], number>;
  for (const name of MEASURED_PROCS) cpu[name] = figure(root.cpuUsPerJob, name, what);
  return {
    ...plan,
    cpuUsPerJob: cpu,
    storedBytesPerJob: {
      events: figure(root.storedBytesPerJob, "events", what),
      views: figure(root.storedBytesPerJob, "views", what),
    },
  };
}

interface ResultsShape {
  scenarios: {
    e2e?: {
      hub?: {
        closed?: {
          phase?: {
            units: number;
            cpuSec: Record<string, number>;
            jetstream?: { cost: { streams: Record<string, { bytes: number }> } };
          };
        };
      };
    };
  };
}

/**
 * CPU seconds of the read-models process, or for a results file of the read models apart (before
 * `serve projector indexer` ran them in one process) the projector's and the indexer's added up:
 * the same two folds' work, less the second delivery of each event they no longer take.
 */
export function readModelsCpuSec(cpuSec: Readonly<Record<string, number>>): number | undefined {
  const { projector, indexer } = cpuSec;
  if (cpuSec["read-models"] !== undefined) return cpuSec["read-models"];
  return projector !== undefined && indexer !== undefined ? projector + indexer : undefined;
}

/** CPU µs and stored bytes per job from a results file's e2e closed loop (bench/run.ts). */
export function inputsFromResults(results: ResultsShape, plan: SizingPlan): SizingInputs {
  const phase = results.scenarios.e2e?.hub?.closed?.phase;
  if (!phase || phase.units <= 0) throw new Error("the results hold no e2e closed loop");
  const perJob = (value: number | undefined) => (value ?? Number.NaN) / phase.units;
  const cpuSec: Readonly<Record<string, number | undefined>> = {
    ...phase.cpuSec,
    "read-models": readModelsCpuSec(phase.cpuSec),
  };
  const cpu: Record<string, number> = {};
  for (const name of MEASURED_PROCS) cpu[name] = perJob(cpuSec[name]) * 1_000_000;
  const streams = phase.jetstream?.cost.streams ?? {};
  const stored = {
    events: perJob(streams.SWITCHYARD_EVENTS?.bytes),
    views: perJob(streams.KV_sy_jobs?.bytes),
  };
  return checked({ cpuUsPerJob: cpu, storedBytesPerJob: stored }, plan, "results");
}

/** Decimal units, as disks are sold: 1 GB = 10^9 bytes. */
export function formatBytes(bytes: number): string {
  const units = ["B", "kB", "MB", "GB", "TB", "PB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value >= 100 || unit === 0 ? Math.round(value) : value.toFixed(1)} ${units[unit]}`;
}

/** The markdown table of docs/deploy.md. */
export function renderSizing(rows: readonly SizingRow[], retentionSec: number): string {
  const cores = (n: number) => n.toFixed(1);
  const days = `${Math.round((retentionSec / 86_400) * 10) / 10} d`;
  const lines = [
    `| jobs/s | ingress | executor | callback | read-models (projector + indexer) | NATS stream leader / each follower (cores) | all cores | JetStream stored per node: per day / over ${days} | holds? |`,
    "|---|---|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.rate.toLocaleString("en-US")} | ${r.replicas.ingress} | ${r.replicas.executor} | ${r.replicas.callback} | ${r.replicas["read-models"]} (1 active) | ${cores(r.natsLeaderCores)} / ${cores(r.natsFollowerCores)} | ${cores(r.totalCores)} | ${formatBytes(r.storedBytesPerDayPerNode)} / ${formatBytes(r.storedBytesPerNode)} | ${r.beyond ? `no: ${r.beyond}` : "yes"} |`,
    );
  }
  return lines.join("\n");
}
