/**
 * `npm run bench -- ratelimit`: what the per-client rate limit shared by the ingress replicas
 * (services/ingress/shared-rate-limit.ts, KV `sy_rate`) costs a POST /run. The limiter cannot be
 * switched off, so the baseline is a limit no run reaches (1,000,000,000 a minute, what the other
 * scenarios use): one lease then covers the whole phase and every request takes the local path.
 * "Engaged" is a limit 1.5 × the offered rate, so a lease (1% of a minute's budget) covers about
 * 0.9 s of traffic and the replica goes back to KV about once a second. "Over" is a client at the
 * default 600 a minute flooded by the same load: almost every request is refused with 429, and
 * every time the replica's allowance is empty it asks KV again.
 *
 * It runs its own ingress process (the hub's code and flags, a config with these three clients)
 * against the hub's nats-server, so the limits fit the offered rate measured first against the
 * hub's ingress; the hub's executor and projector do the downstream work as in every scenario.
 * KV work comes from nats-server's counters (jetstream.ts) on the `KV_sy_rate` stream.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashToken } from "../../shared/auth/index.ts";
import type { LoadResult } from "../load.ts";
import {
  type Child,
  cpuSec,
  freePort,
  LOOPBACK,
  registerTempDir,
  round,
  waitHttp,
} from "./common.ts";
import { drainHub } from "./drain.ts";
import { load, type Measured, measurePhase } from "./phase.ts";
import type { BenchContext } from "./scenarios.ts";

export interface RatelimitOptions {
  readonly natsUrl: string;
  /** Starts `serve ingress` with this config file as the hub's services are started. */
  readonly startIngress: (configPath: string) => Child;
}

/** The stream behind the KV bucket of the shared budgets (RATE_BUCKET = "sy_rate"). */
const RATE_STREAM = "KV_sy_rate";
const UNLIMITED = 1_000_000_000;
const OVER_LIMIT = 600;
/**
 * The engaged limit over the offered rate: above it with room for the machine's drift, and close
 * enough that a lease (1% of a minute: 0.9 s of traffic) is spent before it lapses (2 s).
 */
const HEADROOM = 1.5;

type ClientName = "off" | "on" | "over";

export interface RatelimitPhase {
  readonly phase: string;
  readonly runsPerMinute: number;
  readonly load: Measured<LoadResult>;
  /** CPU µs of the scenario's ingress per answered request (phase and drain). */
  readonly ingressUsPerRequest: number;
  /** Operations on KV `sy_rate` per 1,000 answered requests. */
  readonly kvPer1000: { readonly reads: number; readonly writes: number; readonly stored: number };
}

function configText(
  options: { readonly natsUrl: string; readonly port: number },
  clients: readonly { id: string; token: string; perMinute: number }[],
): string {
  const entries = clients
    .map(
      (c) => `  - id: ${c.id}
    token_sha256: ["${hashToken(c.token)}"]
    routes: ["bench.*"]
    runs_per_minute: ${c.perMinute}`,
    )
    .join("\n");
  return `
index: { enabled: false }
server: { host: ${LOOPBACK}, port: ${options.port} }
monitoring: { host: ${LOOPBACK}, port: 0 }
nats: { url: "${options.natsUrl}", duplicate_window: 2m }
log: { level: warn }
clients:
${entries}
routes:
  - key: bench.sleep0
    concurrency: 10000
    executor: { kind: builtin, name: sleep, sleep_ms: 0 }
`;
}

const body = JSON.stringify({
  request_id: "rl-[<id>]",
  route: "bench.sleep0",
  input: "benchmark input text",
});

/**
 * The offered rate: the hub's own ingress under the same load, twice (the first run warms it up:
 * cold, it measured less than half the warm rate), not measured further.
 */
async function offeredRate(ctx: BenchContext): Promise<number> {
  const durationSec = 5;
  let okPerSec = 0;
  for (const step of ["warm-up", "offered rate"]) {
    ctx.log(`ratelimit ${step}: POST /run on the hub's ingress for ${durationSec} s`);
    const r = await load(ctx, {
      url: `${ctx.hub.base}/run`,
      method: "POST",
      token: ctx.hub.token,
      body,
      connections: ctx.settings.connections,
      durationSec,
    });
    await drainHub(ctx, `ratelimit ${step}`, ctx.settings.drainTimeoutSec);
    okPerSec = Math.max(okPerSec, r.okPerSec);
  }
  if (okPerSec <= 0) throw new Error("ratelimit: the hub's ingress accepted nothing");
  return okPerSec;
}

async function measure(
  ctx: BenchContext,
  target: { readonly base: string; readonly ingress: Child },
  spec: { readonly phase: string; readonly token: string; readonly perMinute: number },
): Promise<RatelimitPhase> {
  const durationSec = Math.max(5, Math.round(ctx.settings.durationSec / 2));
  const label = `ratelimit ${spec.phase} (${spec.perMinute.toLocaleString("en-US")}/min)`;
  ctx.log(`${label}: POST /run, ${ctx.settings.connections} connections, ${durationSec} s`);
  const cpuBefore = cpuSec(target.ingress.pid);
  const result = await measurePhase<LoadResult>(ctx, {
    run: () =>
      load(ctx, {
        url: `${target.base}/run`,
        method: "POST",
        token: spec.token,
        body,
        connections: ctx.settings.connections,
        durationSec,
      }),
    drain: () => drainHub(ctx, label, ctx.settings.drainTimeoutSec),
    units: (r) => r.total,
    unit: "request",
    countJetStream: true,
  });
  const answered = result.total;
  const kv = result.phase.jetstream?.cost.streams[RATE_STREAM];
  const per1000 = (n: number | undefined) =>
    answered > 0 ? round(((n ?? 0) * 1000) / answered, 3) : Number.NaN;
  return {
    phase: spec.phase,
    runsPerMinute: spec.perMinute,
    load: result,
    ingressUsPerRequest:
      answered > 0
        ? round(((cpuSec(target.ingress.pid) - cpuBefore) * 1e6) / answered, 1)
        : Number.NaN,
    // Reads are direct gets (the bucket allows them); writes are every publish the bucket's
    // stream received, refused compare-and-sets included.
    kvPer1000: {
      reads: per1000(kv?.directGets),
      writes: per1000(kv?.publishes),
      stored: per1000(kv?.stored),
    },
  };
}

export async function ratelimitScenario(ctx: BenchContext, options: RatelimitOptions) {
  const offered = await offeredRate(ctx);
  const limits: Record<ClientName, number> = {
    off: UNLIMITED,
    on: Math.ceil(offered * HEADROOM) * 60,
    over: OVER_LIMIT,
  };
  const tokens = {} as Record<ClientName, string>;
  for (const name of Object.keys(limits) as ClientName[])
    tokens[name] = `rl_${name}_${randomBytes(24).toString("base64url")}`;
  const dir = mkdtempSync(join(tmpdir(), "switchyard-bench-rl-"));
  registerTempDir(dir);
  const port = freePort();
  const configPath = join(dir, "switchyard.yaml");
  const clients = (Object.keys(limits) as ClientName[]).map((name) => ({
    id: `rl-${name}`,
    token: tokens[name],
    perMinute: limits[name],
  }));
  writeFileSync(configPath, configText({ natsUrl: options.natsUrl, port }, clients));
  const ingress = options.startIngress(configPath);
  const target = { base: `http://${LOOPBACK}:${port}`, ingress };
  try {
    await waitHttp(`${target.base}/readyz`);
    const run = (phase: string, name: ClientName) =>
      measure(ctx, target, { phase, token: tokens[name], perMinute: limits[name] });
    // Off, engaged, off again: the baseline brackets the engaged run (the machine's background
    // load drifts), and the first run also warms the new process up.
    const phases = [
      await run("off", "off"),
      await run("engaged", "on"),
      await run("off again", "off"),
      await run("over the limit", "over"),
    ];
    return { offeredPerSec: offered, phases, ...ratios(phases) };
  } finally {
    await ingress.stop("SIGTERM");
  }
}

function ratios(phases: readonly RatelimitPhase[]) {
  const [off, on, offAgain] = phases;
  if (!off || !on || !offAgain) throw new Error("ratelimit: a phase is missing");
  const mean = (pick: (p: RatelimitPhase) => number) => (pick(off) + pick(offAgain)) / 2;
  return {
    throughputRatio: round(on.load.okPerSec / mean((p) => p.load.okPerSec), 3),
    ingressCpuRatio: round(on.ingressUsPerRequest / mean((p) => p.ingressUsPerRequest), 3),
  };
}

export type RatelimitFigures = Awaited<ReturnType<typeof ratelimitScenario>>;

/** The report's section: one row per phase, then the engaged ÷ off ratios. */
export function renderRatelimitReport(f: RatelimitFigures): string {
  const lines = [
    "",
    `## Shared rate limit (offered rate ${f.offeredPerSec.toLocaleString("en-US")}/s on the hub's ingress)`,
    "",
    "| phase | limit per minute | accepted/s | 429/s | p50 / p99 ms | ingress µs/request | KV reads / writes (stored) per 1,000 requests |",
    "|---|---|---|---|---|---|---|",
  ];
  for (const p of f.phases) {
    const l = p.load;
    const refused = Math.round((l.statusCodes["429"] ?? 0) / l.durationSec);
    lines.push(
      `| ${p.phase} | ${p.runsPerMinute.toLocaleString("en-US")} | ${l.okPerSec.toLocaleString("en-US")} | ${refused.toLocaleString("en-US")} | ${l.latencyMs.p50} / ${l.latencyMs.p99} | ${p.ingressUsPerRequest} | ${p.kvPer1000.reads} / ${p.kvPer1000.writes} (${p.kvPer1000.stored}) |`,
    );
  }
  lines.push(
    "",
    `Engaged ÷ off (mean of the two off runs): throughput ${f.throughputRatio}, ingress CPU per request ${f.ingressCpuRatio}.`,
    "",
  );
  return lines.join("\n");
}
