/**
 * The sizing model of docs/deploy.md ("Sizing past one machine"), computed from a benchmark run's
 * measured CPU per job. Pure: figures in, table out (tests/bench/sizing.test.ts).
 *
 *   cores(service) = rate × CPU µs per job(service) ÷ 1,000,000 ÷ utilisation
 *   replicas(service) = ceil(cores ÷ CPU per pod), at least 2 (no single point of failure)
 *
 * Exceptions the formula must not hide:
 * - the projector folds on one active replica (a lease), so its cores cannot exceed one process's
 *   one core: past `projectorLimit` jobs/s the model stops holding (partitioned projectors need
 *   subject transforms, nats-server 2.10+);
 * - every event goes through the SWITCHYARD_EVENTS stream's leader: that node's cores are the
 *   measured nats-server CPU per job (the leader does the writes, the deliveries and the acks),
 *   the two followers need about half of that (they only store the replicated writes).
 */

export const SIZED_SERVICES = ["ingress", "executor", "callback", "projector"] as const;
export type SizedService = (typeof SIZED_SERVICES)[number];

export interface SizingInputs {
  /** CPU µs per completed job, measured per process in the closed loop. */
  readonly cpuUsPerJob: Readonly<Record<SizedService | "nats-server", number>>;
  /** Share of a core to plan for (headroom for bursts and GC), e.g. 0.6. */
  readonly utilisation: number;
  /** CPU limit of one pod of a hub service (the manifests: 1 core; ingress 2). */
  readonly coresPerPod: Readonly<Record<SizedService, number>>;
}

export interface SizingRow {
  readonly rate: number;
  readonly replicas: Readonly<Record<SizedService, number>>;
  /** Cores of the stream leader's NATS node, and of each follower (R3). */
  readonly natsLeaderCores: number;
  readonly natsFollowerCores: number;
  /** Cores the whole hub needs (services and three NATS nodes). */
  readonly totalCores: number;
  /** Why this rate is past what the model covers; undefined when it holds. */
  readonly beyond?: string;
}

/** Jobs per second one active projector can fold at the planned utilisation. */
export function projectorLimit(inputs: SizingInputs): number {
  return Math.floor((1_000_000 / inputs.cpuUsPerJob.projector) * inputs.utilisation);
}

export function sizeFor(rate: number, inputs: SizingInputs): SizingRow {
  const coresOf = (us: number) => (rate * us) / 1_000_000 / inputs.utilisation;
  const replicas = {} as Record<SizedService, number>;
  let serviceCores = 0;
  for (const service of SIZED_SERVICES) {
    const cores = coresOf(inputs.cpuUsPerJob[service]);
    serviceCores += cores;
    // The projector is active/standby: one folds, one waits.
    replicas[service] =
      service === "projector" ? 2 : Math.max(2, Math.ceil(cores / inputs.coresPerPod[service]));
  }
  const natsLeaderCores = coresOf(inputs.cpuUsPerJob["nats-server"]);
  const natsFollowerCores = natsLeaderCores / 2;
  const limit = projectorLimit(inputs);
  const beyond =
    rate > limit
      ? `one active projector folds at most about ${limit.toLocaleString("en-US")} jobs/s`
      : undefined;
  return {
    rate,
    replicas,
    natsLeaderCores,
    natsFollowerCores,
    totalCores: serviceCores + natsLeaderCores + 2 * natsFollowerCores,
    ...(beyond ? { beyond } : {}),
  };
}

/** CPU µs per job of each process from a results file's e2e closed loop (bench/run.ts). */
export function inputsFromResults(
  results: {
    scenarios: {
      e2e?: { hub?: { closed?: { phase?: { units: number; cpuSec: Record<string, number> } } } };
    };
  },
  options: Pick<SizingInputs, "utilisation" | "coresPerPod">,
): SizingInputs {
  const phase = results.scenarios.e2e?.hub?.closed?.phase;
  if (!phase || phase.units <= 0) throw new Error("the results hold no e2e closed loop");
  const us = (name: string) => {
    const sec = phase.cpuSec[name];
    if (sec === undefined) throw new Error(`the results hold no CPU figure for ${name}`);
    return (sec * 1_000_000) / phase.units;
  };
  return {
    ...options,
    cpuUsPerJob: {
      ingress: us("ingress"),
      executor: us("executor"),
      callback: us("callback"),
      projector: us("projector"),
      "nats-server": us("nats-server"),
    },
  };
}

/** The markdown table of docs/deploy.md. */
export function renderSizing(rows: readonly SizingRow[]): string {
  const cores = (n: number) => n.toFixed(1);
  const lines = [
    "| jobs/s | ingress | executor | callback | projector | NATS stream leader / each follower (cores) | all cores | holds? |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.rate.toLocaleString("en-US")} | ${r.replicas.ingress} | ${r.replicas.executor} | ${r.replicas.callback} | ${r.replicas.projector} (1 active) | ${cores(r.natsLeaderCores)} / ${cores(r.natsFollowerCores)} | ${cores(r.totalCores)} | ${r.beyond ? `no: ${r.beyond}` : "yes"} |`,
    );
  }
  return lines.join("\n");
}
