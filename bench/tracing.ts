/**
 * `bun bench/tracing.ts`: what tracing costs in CPU per job (docs/performance.md, "Tracing").
 *
 * 1. Off: the hooks a job passes through (accept, dispatch, the kind's run, a callback attempt,
 *    the view write) against the shared no-op tracer, timed in a tight loop: nanoseconds per job.
 * 2. End to end: the five services in this process over a private nats-server, jobs with a
 *    callback (builtin echo, receiver in this process), tracing off and then on (exporting
 *    OTLP/HTTP protobuf to a sink in a child process). CPU seconds of this process per job,
 *    measured with process.cpuUsage() over rounds of BENCH_TRACING_JOBS jobs (default 1,000),
 *    after a warm-up. The driver and receiver cost the same in both modes, so the difference is
 *    what tracing adds. Talks to 127.0.0.1 only; stops by itself.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RunningHub, SERVICE_NAMES, startServices } from "../services/runtime/run.ts";
import { hashToken } from "../shared/auth/index.ts";
import { systemClock } from "../shared/clock/index.ts";
import { parseConfig } from "../shared/config/index.ts";
import { randomIds } from "../shared/ids/index.ts";
import { createLogger } from "../shared/log/index.ts";
import { startNatsServer } from "../shared/nats/index.ts";
import {
  createTracing,
  endWhenSettled,
  NO_TRACING,
  type Tracing,
} from "../shared/telemetry/index.ts";
import { generateWebhookSecret } from "../shared/webhooks/index.ts";

const JOBS = Number(process.env.BENCH_TRACING_JOBS ?? 1_000);
const ROUNDS = Number(process.env.BENCH_TRACING_ROUNDS ?? 3);
const TOKEN = "bench-tracing-token-0123456789abcdef";
const logger = createLogger({ level: "warn", service: "bench-tracing" });

/** The hooks of one job with tracing off, as the services call them. */
async function offHooksNsPerJob(iterations: number): Promise<number> {
  const tracing: Tracing = NO_TRACING;
  const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const job = { job_id: "job_x", client_id: "c", route: "r" };
  const done = Promise.resolve(1);
  const started = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) {
    const accept = tracing.start("POST /run", { parent, kind: "server", attributes: job });
    await endWhenSettled(accept, done, () => ({ job_id: "job_x" }));
    const dispatch = tracing.start("dispatch", { parent, kind: "consumer", attributes: job });
    await endWhenSettled(dispatch, done);
    const callback = tracing.start("callback", { parent, kind: "client", attributes: job });
    callback.set({ outcome: "delivered", "http.response.status_code": 204 });
    callback.end();
  }
  return Number(process.hrtime.bigint() - started) / iterations;
}

/** The same hooks with the SDK exporting to `tracing`'s endpoint: CPU µs per job, flush included. */
async function onHooksUsPerJob(tracing: Tracing, jobs: number): Promise<number> {
  const job = { job_id: "job_x", client_id: "c", route: "r" };
  const before = process.cpuUsage();
  for (let i = 0; i < jobs; i++) {
    const accept = tracing.start("POST /run", { kind: "server", attributes: job });
    const dispatch = tracing.start("dispatch", { parent: accept.traceparent, attributes: job });
    const run = tracing.start("execute builtin", { parent: dispatch.traceparent, attributes: job });
    run.end();
    dispatch.end();
    const callback = tracing.start("callback", { parent: accept.traceparent, attributes: job });
    callback.set({ outcome: "delivered", "http.response.status_code": 204, attempt: 1 });
    callback.end();
    tracing.start("project", { parent: accept.traceparent, attributes: job }).end();
    accept.end();
    // Let the batch processor export as it would between jobs.
    if (i % 16 === 0) await Bun.sleep(0);
  }
  await tracing.flush();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / jobs;
}

/** An OTLP/HTTP sink in a child process: its CPU is not this process's. */
function startSink(): { url: Promise<string>; stop(): void } {
  const child = Bun.spawn(
    [
      process.execPath,
      "-e",
      `const s = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(r) { await r.arrayBuffer(); return new Response(new Uint8Array(0), { headers: { "content-type": "application/x-protobuf" } }); } });
       console.log(s.port);`,
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  const url = (async () => {
    const reader = child.stdout.getReader();
    const { value } = await reader.read();
    reader.releaseLock();
    return `http://127.0.0.1:${new TextDecoder().decode(value).trim()}`;
  })();
  return { url, stop: () => child.kill() };
}

async function runJobs(hub: RunningHub, receiverUrl: string, arrived: Set<string>, label: string) {
  const base = hub.ingress?.url ?? "";
  let next = 0;
  const want = new Set<string>();
  const workers = Array.from({ length: 32 }, async () => {
    while (next < JOBS) {
      const i = next++;
      const res = await fetch(`${base}/run`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({
          request_id: `${label}-${i}`,
          route: "b.echo",
          input: "x",
          callback_url: receiverUrl,
        }),
      });
      want.add(((await res.json()) as { job_id: string }).job_id);
    }
  });
  await Promise.all(workers);
  const deadline = Date.now() + 120_000;
  while ([...want].some((id) => !arrived.has(id))) {
    if (Date.now() > deadline) throw new Error(`${label}: callbacks missing after 120 s`);
    await Bun.sleep(20);
  }
}

/** CPU microseconds of this process per job, per round, for one tracing mode. */
async function measure(tracing: Tracing, label: string): Promise<number[]> {
  const storeDir = await mkdtemp(join(tmpdir(), "sy-bench-tracing-"));
  const nats = await startNatsServer({ storeDir, env: process.env });
  const arrived = new Set<string>();
  const receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      arrived.add(((await req.json()) as { data: { job_id: string } }).data.job_id);
      return new Response(null, { status: 204 });
    },
  });
  const config = parseConfig(
    `
server: { host: 127.0.0.1, port: 0 }
monitoring: { host: 127.0.0.1, port: 0 }
nats: { url: "${nats.url}" }
log: { level: warn }
callbacks: { allow_cidrs: ["127.0.0.1/32"] }
clients:
  - id: bench
    token_sha256: ["${hashToken(TOKEN)}"]
    routes: ["b.*"]
    runs_per_minute: 10000000
    callback_secrets: ["${generateWebhookSecret()}"]
routes:
  - key: b.echo
    executor: { kind: builtin, name: echo }
`,
    {},
    "bench config",
  );
  const hub = await startServices(SERVICE_NAMES, {
    config,
    logger,
    clock: systemClock,
    ids: randomIds,
    tracing,
  });
  const receiverUrl = `http://127.0.0.1:${receiver.port}/cb`;
  try {
    await runJobs(hub, receiverUrl, arrived, `${label}-warm`);
    const perJob: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const before = process.cpuUsage();
      await runJobs(hub, receiverUrl, arrived, `${label}-${round}`);
      const used = process.cpuUsage(before);
      perJob.push((used.user + used.system) / JOBS);
    }
    return perJob;
  } finally {
    await hub.stop();
    receiver.stop(true);
    await nats.stop("SIGKILL");
    await rm(storeDir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

if (import.meta.main) {
  await offHooksNsPerJob(200_000);
  const ns = await offHooksNsPerJob(2_000_000);
  process.stdout.write(`tracing off: the hooks of one job cost ${ns.toFixed(0)} ns\n`);
  const off = await measure(NO_TRACING, "off");
  const sink = startSink();
  const on = await createTracing({
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: await sink.url },
    defaultServiceName: "bench",
    logger,
  });
  let traced: number[];
  let sdkUs: number;
  try {
    await onHooksUsPerJob(on, 5_000);
    sdkUs = await onHooksUsPerJob(on, 50_000);
    traced = await measure(on, "on");
  } finally {
    await on.shutdown();
    sink.stop();
  }
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(", ");
  process.stdout.write(
    [
      `end to end, CPU of the hub process per job (µs), ${ROUNDS} rounds of ${JOBS} jobs with a callback:`,
      `  tracing off: ${fmt(off)} (median ${median(off).toFixed(0)})`,
      `  tracing on:  ${fmt(traced)} (median ${median(traced).toFixed(0)}), ${(median(traced) / median(off)).toFixed(2)}× off`,
      `  the off hooks are ${((ns / 1000 / median(off)) * 100).toFixed(3)}% of a job's CPU`,
      `tracing on: the SDK's five spans of one job (start, end, batch, protobuf export) cost ${sdkUs.toFixed(1)} µs of CPU, ${((sdkUs / median(off)) * 100).toFixed(1)}% of a job`,
      "",
    ].join("\n"),
  );
}
