/**
 * The benchmark's scenarios, each a sequence of measured phases (phase.ts) against the hub, the
 * ceiling and every peer that runs, with the same load generator and the same receiver.
 */
import { randomBytes } from "node:crypto";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import type { E2eResult, E2eSpec } from "../e2e.ts";
import { latencyStages, type StageFigure, stageTable } from "../latency-stages.ts";
import type { LoadResult, LoadSpec } from "../load.ts";
import { round } from "./common.ts";
import { drainHub, watchBacklog } from "./drain.ts";
import type { RoundRatios } from "./e2e-rounds.ts";
import type { JetStreamMonitor } from "./jetstream.ts";
import type { Peer, PeerName } from "./peers.ts";
import { e2e, HUB_SERVICES, load, type Measured, measurePhase, type PhaseDeps } from "./phase.ts";

export interface BenchContext extends PhaseDeps {
  readonly settings: {
    readonly durationSec: number;
    readonly e2eJobs: number;
    readonly pathJobs: number;
    readonly rate: number;
    readonly connections: number;
    readonly drainTimeoutSec: number;
    /** One hub job in this many gets its stages timed (bench/latency-stages.ts); 0 or absent: none. */
    readonly stampEvery?: number;
    /** Poll /jsz for consumer backlogs during the hub's closed loop (default false: a hub-only cost). */
    readonly watchBacklog?: boolean;
    /** Jobs each system runs, unmeasured, before its measured closed loop; 0 or absent: none. */
    readonly warmupJobs?: number;
    /** Closed loops per system, interleaved (e2e-rounds.ts); 1 or absent: one, hub first. */
    readonly e2eRounds?: number;
  };
  readonly hub: { readonly base: string; readonly token: string; readonly natsUrl?: string };
  readonly peerToken: string;
  readonly ceilingBase: string;
  readonly receiverUrl: string;
  readonly peers: readonly Peer[];
  readonly monitor: JetStreamMonitor;
  readonly log: (line: string) => void;
  readonly notes: string[];
  /**
   * Restarts the read models' process with the search index on or off (the projector folds on
   * from its durable). The ingress scenario measures the hub's POST /run without the index too:
   * what the index's writes cost the POST goal. Absent: that phase is left out.
   */
  readonly switchIndex?: (enabled: boolean) => Promise<void>;
}

export type LoadFigures = Measured<LoadResult>;
export type E2eFigures = Measured<E2eResult> & {
  readonly backlogPeaks: Record<string, number> | null;
  /** The hub's per-stage latencies of a sample of the loop's jobs (bench/latency-stages.ts). */
  readonly stages?: StageFigure[];
};
export type PerPeer<T> = Partial<Record<PeerName, T>>;

const drainOf = (ctx: BenchContext, label: string) => () =>
  drainHub(ctx, label, ctx.settings.drainTimeoutSec);

function runBody(route: string, requestId: string): string {
  return JSON.stringify({ request_id: requestId, route, input: "benchmark input text" });
}

function loadSpec(
  ctx: BenchContext,
  spec: Omit<LoadSpec, "connections" | "durationSec">,
  durationSec?: number,
): LoadSpec {
  return {
    connections: ctx.settings.connections,
    durationSec: durationSec ?? ctx.settings.durationSec,
    ...spec,
  };
}

/** A load phase against the hub or the ceiling: nats-server's counters read around it. */
function hubLoad(
  ctx: BenchContext,
  label: string,
  spec: LoadSpec,
  unit: "job" | "request" | "run",
) {
  ctx.log(
    `${label}: ${spec.method} ${spec.url}, ${spec.connections} connections, ${spec.durationSec} s`,
  );
  return measurePhase<LoadResult>(ctx, {
    run: () => load(ctx, spec),
    drain: drainOf(ctx, label),
    units: (r) => r.ok,
    unit,
    countJetStream: true,
  });
}

function peerLoad(ctx: BenchContext, peer: Peer, label: string, spec: LoadSpec) {
  ctx.log(
    `${peer.name} ${label}: ${spec.method}, ${spec.connections} connections, ${spec.durationSec} s`,
  );
  return measurePhase<LoadResult>(ctx, {
    run: () => load(ctx, spec),
    drain: () => peer.drain(label, ctx.settings.drainTimeoutSec),
    units: (r) => r.ok,
    unit: spec.method === "POST" ? "job" : "request",
    countJetStream: false,
  });
}

export async function ingressScenario(ctx: BenchContext) {
  const body = runBody("bench.sleep0", "ing-[<id>]");
  const ceiling = await hubLoad(
    ctx,
    "ceiling",
    loadSpec(ctx, { url: `${ctx.ceilingBase}/run`, method: "POST", body }),
    "run",
  );
  const hub = await hubLoad(
    ctx,
    "ingress",
    loadSpec(ctx, { url: `${ctx.hub.base}/run`, method: "POST", token: ctx.hub.token, body }),
    "job",
  );
  const hubWithoutIndex = await withoutIndex(ctx, body);
  const peers: PerPeer<LoadFigures> = {};
  for (const peer of ctx.peers) {
    peers[peer.name] = await peerLoad(
      ctx,
      peer,
      "POST /run",
      loadSpec(ctx, { url: `${peer.base}/run`, method: "POST", token: ctx.peerToken, body }),
    );
  }
  // The ceiling again, so it brackets the hub's run: on a shared machine the background load
  // drifts, and the ratio uses the mean of the two ceiling runs.
  const ceilingAgain = await hubLoad(
    ctx,
    "ceiling again",
    loadSpec(ctx, { url: `${ctx.ceilingBase}/run`, method: "POST", body }),
    "run",
  );
  const ceilingMeanPerSec = Math.round((ceiling.okPerSec + ceilingAgain.okPerSec) / 2);
  return {
    ceiling,
    ceilingAgain,
    ceilingMeanPerSec,
    hub,
    ...(hubWithoutIndex ? { hubWithoutIndex } : {}),
    peers,
    ratioToCeiling: round(hub.okPerSec / ceilingMeanPerSec, 3),
    ratioToPeer: ratios(hub.okPerSec, peers, (p) => p.okPerSec),
  };
}

/**
 * The hub's POST /run with the search index off (the read models restarted without it), then on
 * again; the index catches up on the jobs it missed before the peers' phases start, so that no
 * peer shares the machine with its catch-up.
 */
async function withoutIndex(ctx: BenchContext, body: string): Promise<LoadFigures | undefined> {
  if (!ctx.switchIndex) return undefined;
  ctx.log("read models restarted without the search index");
  await ctx.switchIndex(false);
  const figures = await hubLoad(
    ctx,
    "ingress, search index off",
    loadSpec(ctx, { url: `${ctx.hub.base}/run`, method: "POST", token: ctx.hub.token, body }),
    "job",
  );
  ctx.log("read models restarted with the search index; it catches up");
  await ctx.switchIndex(true);
  await drainHub(ctx, "the index's catch-up", ctx.settings.drainTimeoutSec);
  return figures;
}

export function ratios<T>(hub: number, peers: PerPeer<T>, pick: (p: T) => number): PerPeer<number> {
  const out: PerPeer<number> = {};
  for (const [name, p] of Object.entries(peers) as [PeerName, T][])
    out[name] = round(hub / pick(p), 3);
  return out;
}

export async function replayScenario(ctx: BenchContext) {
  const body = JSON.stringify({
    request_id: "replay-1",
    route: "bench.echo",
    input: "benchmark input text",
  });
  const first = await fetch(`${ctx.hub.base}/run`, {
    method: "POST",
    headers: { authorization: `Bearer ${ctx.hub.token}`, "content-type": "application/json" },
    body,
  });
  await first.arrayBuffer();
  await drainHub(ctx, "replay setup", ctx.settings.drainTimeoutSec);
  const duration = Math.max(5, Math.round(ctx.settings.durationSec / 2));
  const hub = await hubLoad(
    ctx,
    "replay (same request_id)",
    loadSpec(
      ctx,
      { url: `${ctx.hub.base}/run`, method: "POST", token: ctx.hub.token, body },
      duration,
    ),
    "request",
  );
  return { hub, firstStatus: first.status };
}

async function createJobs(base: string, token: string, n: number): Promise<string[]> {
  const prefix = `get-${randomBytes(4).toString("hex")}`;
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < n) {
        const i = next++;
        const res = await fetch(`${base}/run`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({
            request_id: `${prefix}-${i}`,
            route: "bench.echo",
            input: `get ${i}`,
          }),
        });
        ids.push(((await res.json()) as { job_id: string }).job_id);
      }
    }),
  );
  return ids;
}

export async function getScenario(ctx: BenchContext) {
  const duration = Math.max(5, Math.round(ctx.settings.durationSec / 2));
  const ids = await createJobs(ctx.hub.base, ctx.hub.token, 1000);
  await drainHub(ctx, "get setup", ctx.settings.drainTimeoutSec);
  const paths = (list: string[]) => list.map((id) => `/jobs/${id}`);
  const hub = await hubLoad(
    ctx,
    `GET /jobs/{id} over ${ids.length} jobs`,
    loadSpec(
      ctx,
      { url: ctx.hub.base, method: "GET", token: ctx.hub.token, paths: paths(ids) },
      duration,
    ),
    "request",
  );
  const peers: PerPeer<LoadFigures> = {};
  for (const peer of ctx.peers) {
    const peerIds = await createJobs(peer.base, ctx.peerToken, 1000);
    await peer.drain("get setup", ctx.settings.drainTimeoutSec);
    peers[peer.name] = await peerLoad(
      ctx,
      peer,
      "GET /jobs/:id",
      loadSpec(
        ctx,
        { url: peer.base, method: "GET", token: ctx.peerToken, paths: paths(peerIds) },
        duration,
      ),
    );
  }
  return { hub, peers, ratioToPeer: ratios(hub.okPerSec, peers, (p) => p.okPerSec) };
}

/**
 * One e2e loop against the hub or a peer. `countJetStream`: read nats-server's counters around it
 * through `ctx.monitor` (default: for the hub only; a floor with a monitor of its own may too).
 * `watchBacklog`: poll every consumer's backlog through the phase (default: the hub's closed loop
 * when `settings.watchBacklog`). `warm`: run the warm-up before a closed loop (default true; a
 * system already warmed by an earlier round skips it).
 */
export async function e2ePhase(
  ctx: BenchContext,
  who: "hub" | Peer,
  mode: "closed" | "rate",
  options: {
    readonly countJetStream?: boolean;
    readonly watchBacklog?: boolean;
    readonly warm?: boolean;
  } = {},
): Promise<E2eFigures> {
  const s = ctx.settings;
  const common = {
    base: who === "hub" ? ctx.hub.base : who.base,
    token: who === "hub" ? ctx.hub.token : ctx.peerToken,
    route: "bench.echo",
    prefix: `e2e-${mode}-${randomBytes(4).toString("hex")}`,
    callbackUrl: `${ctx.receiverUrl}/cb`,
    receiverUrl: ctx.receiverUrl,
  };
  const spec: E2eSpec =
    mode === "closed"
      ? {
          ...common,
          jobs: s.e2eJobs,
          concurrency: s.connections,
          sampleEvery: 250,
          pollMs: 10,
          timeoutSec: 300,
        }
      : {
          ...common,
          rate: s.rate,
          durationSec: s.durationSec,
          sampleEvery: 10,
          pollMs: 2,
          timeoutSec: s.durationSec + 120,
        };
  const stampEvery = who === "hub" && ctx.hub.natsUrl ? (s.stampEvery ?? 0) : 0;
  const name = who === "hub" ? "hub" : who.name;
  const label = `e2e ${name} ${mode === "closed" ? `${s.e2eJobs} jobs, ${s.connections} in flight` : `${s.rate} jobs/s for ${s.durationSec} s`}`;
  const drain = who === "hub" ? drainOf(ctx, label) : () => who.drain(label, s.drainTimeoutSec);
  if (mode === "closed" && (s.warmupJobs ?? 0) > 0 && options.warm !== false) {
    // A service's first tens of thousands of jobs pay for its JIT compiler (a third of the hub's
    // CPU in a cold 10,000-job loop): warm every system alike and measure what a running one costs.
    ctx.log(`e2e ${name} warm-up: ${s.warmupJobs} jobs, not measured`);
    await e2e(ctx, { ...spec, jobs: s.warmupJobs as number, prefix: `${spec.prefix}-warm` });
    await drain();
  }
  await fetch(`${ctx.receiverUrl}/reset`, { method: "POST" });
  ctx.log(label);
  // Every consumer's backlog (pending + ack-pending), peak and mean, while the hub runs the closed
  // loop, only when asked: each poll of /jsz costs nats-server about 4 ms with its locks held;
  // polling every 200 ms took the hub's p99 at 500/s from about 6 to 8-21 ms in side-by-side runs
  // (docs/history/performance.md, "2026-11-26 04:35 and 05:00 UTC") and its closed loop's p50
  // submit → callback up too (docs/performance.md, "Where a job waits"), a cost no peer paid.
  const watch =
    options.watchBacklog ?? (who === "hub" && mode === "closed" && s.watchBacklog === true);
  const backlog = watch ? watchBacklog(ctx.monitor) : undefined;
  const { stamps, ...result } = await measurePhase<E2eResult>(ctx, {
    run: () => e2e(ctx, stampEvery > 0 ? { ...spec, stampEvery } : spec),
    drain,
    units: (r) => r.completed,
    unit: "job",
    countJetStream: options.countJetStream ?? who === "hub",
    ...(who === "hub" ? { threadsOf: HUB_SERVICES } : {}),
  });
  const backlogPeaks = backlog ? await backlog.stop() : null;
  if (backlog) ctx.log(`mean consumer backlogs of ${label}: ${JSON.stringify(backlog.means())}`);
  const stages = stamps && (await timeStages(ctx, label, stamps));
  return { ...result, backlogPeaks, ...(stages ? { stages } : {}) };
}

/** The sampled jobs' stages, read after the phase (and its drain) ended; logged as a table. */
async function timeStages(
  ctx: BenchContext,
  label: string,
  stamps: NonNullable<E2eResult["stamps"]>,
): Promise<StageFigure[] | undefined> {
  if (!ctx.hub.natsUrl) return undefined;
  const stats = (await (await fetch(`${ctx.receiverUrl}/stats`)).json()) as {
    times: Record<string, number>;
  };
  const stages = await latencyStages({
    natsUrl: ctx.hub.natsUrl,
    stream: TOPOLOGY.eventsStream,
    clientId: "bench",
    stamps,
    arrivals: stats.times,
  });
  ctx.log(`stages of ${label}:\n${stageTable(stages)}`);
  return stages;
}

export async function e2eScenario(ctx: BenchContext) {
  const hub = {
    closed: await e2ePhase(ctx, "hub", "closed"),
    rate: await e2ePhase(ctx, "hub", "rate"),
  };
  const peers: PerPeer<{ closed: E2eFigures; rate: E2eFigures }> = {};
  for (const peer of ctx.peers) {
    peers[peer.name] = {
      closed: await e2ePhase(ctx, peer, "closed"),
      rate: await e2ePhase(ctx, peer, "rate"),
    };
  }
  return {
    hub,
    peers,
    ratioToPeer: ratios(hub.closed.completedPerSec, peers, (p) => p.closed.completedPerSec),
  };
}

/** The paths a job can take, each measured alone for what it costs nats-server per job. */
export const JOB_PATHS = [
  { path: "builtin echo, callback on the first try", route: "bench.echo", callback: "/cb" },
  { path: "HTTP executor 2xx, callback on the first try", route: "bench.http", callback: "/cb" },
  {
    path: "HTTP executor retried once (503, then 2xx)",
    route: "bench.http-retry",
    callback: "/cb",
  },
  { path: "callback retried once (503, then 204)", route: "bench.echo", callback: "/cb-flaky" },
] as const;

/**
 * `pathJobs` jobs per path, closed loop, counters read around each (drain included). Retries wait
 * 100 ms (the bench config's retry_backoff and callback_retry_schedule).
 */
export async function pathsScenario(ctx: BenchContext) {
  const out: { path: string; route: string; figures: E2eFigures }[] = [];
  for (const p of JOB_PATHS) {
    await fetch(`${ctx.receiverUrl}/reset`, { method: "POST" });
    const spec: E2eSpec = {
      base: ctx.hub.base,
      token: ctx.hub.token,
      route: p.route,
      prefix: `path-${randomBytes(4).toString("hex")}`,
      callbackUrl: `${ctx.receiverUrl}${p.callback}`,
      receiverUrl: ctx.receiverUrl,
      jobs: ctx.settings.pathJobs,
      concurrency: ctx.settings.connections,
      sampleEvery: 1_000_000,
      pollMs: 10,
      timeoutSec: 300,
    };
    const label = `path: ${p.path}, ${spec.jobs} jobs`;
    ctx.log(label);
    const figures = await measurePhase<E2eResult>(ctx, {
      run: () => e2e(ctx, spec),
      drain: drainOf(ctx, label),
      units: (r) => r.completed,
      unit: "job",
      countJetStream: true,
    });
    out.push({ path: p.path, route: p.route, figures: { ...figures, backlogPeaks: null } });
  }
  return out;
}

/** Busy cores of every tracked process over a quiet window (nothing submitted). */
export async function measureIdle(ctx: BenchContext, windowSec: number) {
  const before = ctx.procs.cpu();
  await Bun.sleep(windowSec * 1000);
  const after = ctx.procs.cpu();
  const cores: Record<string, number> = {};
  for (const [name, sec] of after)
    cores[name] = round((sec - (before.get(name) ?? 0)) / windowSec, 4);
  return { windowSec, cores };
}

export type IngressFigures = Awaited<ReturnType<typeof ingressScenario>>;
export type ReplayFigures = Awaited<ReturnType<typeof replayScenario>>;
export type GetFigures = Awaited<ReturnType<typeof getScenario>>;
/** The e2e scenario's figures; `byRound` only from interleaved rounds (e2e-rounds.ts). */
export type E2eScenarioFigures = Awaited<ReturnType<typeof e2eScenario>> & {
  readonly byRound?: PerPeer<RoundRatios>;
};
export type PathFigures = Awaited<ReturnType<typeof pathsScenario>>;
export type IdleFigures = Awaited<ReturnType<typeof measureIdle>>;
