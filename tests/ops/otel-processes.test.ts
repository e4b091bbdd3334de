import { expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { Subprocess } from "bun";
import { FAULT_CLIENT, faultYaml, getJob } from "../faults/procs.ts";
import { startNats } from "../helpers/nats.ts";
import { type ReceivedSpan, startOtlpReceiver } from "../helpers/otlp.ts";
import { waitFor } from "../helpers/wait.ts";

// One job's trace as Kubernetes runs the hub: the four services as separate `switchyard serve`
// processes, each exporting its own spans over OTLP/HTTP, joined only through the traceparent the
// NATS messages carry (run.requested, the route's retry queue, the job's events). The executor
// and the callback receiver each fail once, so both retries cross a queue message too.

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
const EXECUTOR_SECRET = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN = "b7ad6b7169203331";
const INPUT = "input-text-that-must-not-be-traced";
const METADATA = "metadata-that-must-not-be-traced";
const OUTPUT = "output-that-must-not-be-traced";
const SPAN_KIND = { internal: 1, server: 2, client: 3, consumer: 5 } as const;
/** Every attribute key a span may have: shared/telemetry's closed list, plus error.type. */
const ALLOWED_ATTRIBUTES = new Set([
  "job_id",
  "client_id",
  "route",
  "attempt",
  "outcome",
  "http.request.method",
  "http.route",
  "http.response.status_code",
  "error.type",
]);

/**
 * The services a job's trace passes through. The indexer folds the same events into the search
 * index but makes no spans (it is on no job's path), so it is not started here.
 */
const TRACED_SERVICES = ["ingress", "projector", "executor", "callback"] as const;
type TracedService = (typeof TRACED_SERVICES)[number];

/** A line each service logs once it is serving (as tests/faults/procs.ts waits for). */
const READY: Record<TracedService, RegExp> = {
  ingress: /"url":"(http:[^"]+)"/,
  projector: /"msg":"projector (?:started|standing by)"/,
  executor: /"msg":"executor service started"/,
  callback: /"msg":"callback service started"/,
};

interface ServeProc {
  readonly proc: Subprocess<"ignore", "pipe", "pipe">;
  /** The ingress URL from its ready line ("" for the others). */
  readonly url: string;
}

const running = (proc: Subprocess) => proc.exitCode === null && proc.signalCode === null;

/**
 * `switchyard serve <name>` with tracing on through the standard variables only; any OTEL_* of
 * the test's own environment is dropped so the process sees exactly these.
 */
async function serve(
  name: TracedService,
  env: Readonly<Record<string, string>>,
): Promise<ServeProc> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !key.startsWith("OTEL_")),
  );
  const proc = Bun.spawn([process.execPath, MAIN, "serve", name], {
    // The config's folder: relative paths in it (the search index's file) stay out of the repo.
    ...(env.SWITCHYARD_CONFIG ? { cwd: dirname(env.SWITCHYARD_CONFIG) } : {}),
    env: { ...base, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let out = "";
  const pump = async (stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) out += decoder.decode(chunk, { stream: true });
  };
  void pump(proc.stdout);
  void pump(proc.stderr);
  const match = await waitFor(
    `${name} to be ready`,
    () => {
      if (!running(proc)) throw new Error(`${name} exited:\n${out.slice(-2000)}`);
      return READY[name].exec(out) ?? undefined;
    },
    { timeoutMs: 30_000, intervalMs: 25 },
  ).catch((err: unknown) => {
    proc.kill("SIGKILL");
    throw err;
  });
  return { proc, url: match[1] ?? "" };
}

/** Answers the first request with `first`, every later one with `then`, and keeps each traceparent. */
function flakyServer(first: () => Response, then: () => Response) {
  const traceparents: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      await req.arrayBuffer();
      traceparents.push(req.headers.get("traceparent") ?? "(none)");
      return traceparents.length === 1 ? first() : then();
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, traceparents, stop: () => server.stop(true) };
}

const named = (spans: readonly ReceivedSpan[], name: string) =>
  spans.filter((s) => s.name === name).sort((a, b) => attempt(a) - attempt(b));
const attempt = (s: ReceivedSpan) => Number(s.attributes.attempt ?? 0);
const traceparentOf = (s: ReceivedSpan) => `00-${s.traceId}-${s.spanId}-01`;

interface TracedRun {
  readonly jobId: string;
  /** The ingress's traceparent response header. */
  readonly accepted: string;
  readonly exitCodes: readonly number[];
  /** The traceparent of each POST the executor and the callback receiver got. */
  readonly taskTraceparents: readonly string[];
  readonly callbackTraceparents: readonly string[];
}

/**
 * Starts the four services as processes exporting to `otlpEndpoint`, runs one job on an HTTP
 * executor that answers 503 then its output, with a callback receiver that answers 500 then 204,
 * waits until the view shows it done and delivered, and stops every process with SIGTERM (as
 * Kubernetes stops a pod), so each flushes its spans before it exits.
 */
async function runTracedJob(input: { natsUrl: string; otlpEndpoint: string }): Promise<TracedRun> {
  const executor = flakyServer(
    () => new Response("busy", { status: 503 }),
    () => Response.json({ output: OUTPUT }),
  );
  const receiver = flakyServer(
    () => new Response("not yet", { status: 500 }),
    () => new Response(null, { status: 204 }),
  );
  const dir = await mkdtemp(join(tmpdir(), "switchyard-otel-"));
  const configPath = join(dir, "switchyard.yaml");
  const route = `{ kind: http, url: "${executor.url}/task", secret: "${EXECUTOR_SECRET}", retry_backoff: [100ms] }`;
  await writeFile(
    configPath,
    faultYaml({ natsUrl: input.natsUrl, routes: `  - { key: f.http, executor: ${route} }\n` }),
  );
  const env = {
    SWITCHYARD_CONFIG: configPath,
    NATS_URL: input.natsUrl,
    SWITCHYARD_LOG_LEVEL: "info",
    OTEL_EXPORTER_OTLP_ENDPOINT: input.otlpEndpoint,
    OTEL_BSP_SCHEDULE_DELAY: "100",
  };
  const procs: ServeProc[] = [];
  try {
    // The ingress last, as tests/faults/procs.ts starts them.
    for (const name of ["projector", "executor", "callback"] as const) {
      procs.push(await serve(name, env));
    }
    const ingress = await serve("ingress", env);
    procs.push(ingress);
    const base = ingress.url;
    const res = await fetch(`${base}/run`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${FAULT_CLIENT.token}`,
        "content-type": "application/json",
        traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`,
      },
      body: JSON.stringify({
        request_id: "otel-processes-1",
        route: "f.http",
        input: INPUT,
        metadata: { note: METADATA },
        callback_url: `${receiver.url}/cb`,
      }),
    });
    expect(res.status).toBe(202);
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await waitFor(
      "the job done and its callback delivered in the view",
      async () => {
        const view = (await getJob(base, jobId)).body as {
          status?: string;
          callback?: { status?: string };
        };
        return view.status === "done" && view.callback?.status === "delivered";
      },
      { timeoutMs: 20_000, intervalMs: 100 },
    );
    for (const p of procs) p.proc.kill("SIGTERM");
    return {
      jobId,
      accepted: res.headers.get("traceparent") ?? "",
      exitCodes: await Promise.all(procs.map((p) => p.proc.exited)),
      taskTraceparents: executor.traceparents,
      callbackTraceparents: receiver.traceparents,
    };
  } finally {
    for (const p of procs) if (running(p.proc)) p.proc.kill("SIGKILL");
    await Promise.all(procs.map((p) => p.proc.exited));
    executor.stop();
    receiver.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Which process made which span: the resource's service.name. */
const PROCESS_OF: Record<string, string> = {
  "POST /run": "switchyard-ingress",
  dispatch: "switchyard-executor",
  "execute http": "switchyard-executor",
  callback: "switchyard-callback",
  project: "switchyard-projector",
};

test("four serve processes export one trace per job, parented across NATS messages", async () => {
  await using nats = await startNats();
  await using otlp = startOtlpReceiver();
  const run = await runTracedJob({ natsUrl: nats.url, otlpEndpoint: otlp.endpoint });
  expect(run.exitCodes).toEqual(TRACED_SERVICES.map(() => 0));

  // Every span exported is this job's (polling GET /jobs makes none), in the caller's one trace,
  // made by all four processes.
  const spans = otlp.spans();
  expect(spans.filter((s) => s.attributes.job_id !== run.jobId)).toEqual([]);
  expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([CALLER_TRACE]));
  expect(new Set(spans.map((s) => s.service))).toEqual(
    new Set(TRACED_SERVICES.map((s) => `switchyard-${s}`)),
  );
  for (const s of spans) expect(`${s.name}: ${s.service}`).toBe(`${s.name}: ${PROCESS_OF[s.name]}`);
  const accepts = named(spans, "POST /run");
  const dispatches = named(spans, "dispatch");
  const executes = named(spans, "execute http");
  const callbacks = named(spans, "callback");
  const projects = named(spans, "project");
  expect([accepts.length, dispatches.length]).toEqual([1, 1]);
  expect(executes.map(attempt)).toEqual([1, 2]);
  expect(callbacks.map(attempt)).toEqual([1, 2]);
  expect(projects.length).toBeGreaterThan(0);
  expect(spans.length).toBe(2 + executes.length + callbacks.length + projects.length);
  const [accept, dispatch] = [accepts[0] as ReceivedSpan, dispatches[0] as ReceivedSpan];

  // Parents across processes: caller → accept (ingress) → dispatch (executor, from run.requested)
  // → the first attempt; the retry comes from the route's queue message and continues the job's
  // context, as do both callback attempts (from the events, then the callback retry queue) and
  // every view write (from the events).
  expect(accept.parentSpanId).toBe(CALLER_SPAN);
  expect(run.accepted).toBe(traceparentOf(accept));
  expect(dispatch.parentSpanId).toBe(accept.spanId);
  expect(executes.map((s) => s.parentSpanId)).toEqual([dispatch.spanId, accept.spanId]);
  expect(callbacks.map((s) => s.parentSpanId)).toEqual([accept.spanId, accept.spanId]);
  for (const p of projects) expect(p.parentSpanId).toBe(accept.spanId);
  // The executor and the receiver got each attempt's own span as their parent.
  expect(run.taskTraceparents).toEqual(executes.map(traceparentOf));
  expect(run.callbackTraceparents).toEqual(callbacks.map(traceparentOf));

  expect([accept.kind, dispatch.kind]).toEqual([SPAN_KIND.server, SPAN_KIND.consumer]);
  for (const s of [...executes, ...callbacks]) expect(s.kind).toBe(SPAN_KIND.client);
  for (const s of projects) expect(s.kind).toBe(SPAN_KIND.internal);
  const results = (list: ReceivedSpan[]) =>
    list.map((s) => [
      s.attributes.outcome,
      s.attributes["http.response.status_code"],
      s.statusCode,
    ]);
  expect(accept.attributes.outcome).toBe("accepted");
  expect(results(executes)).toEqual([
    ["retry", 503, 2],
    ["done", undefined, 0],
  ]);
  expect(results(callbacks)).toEqual([
    ["retry", 500, 2],
    ["delivered", 204, 0],
  ]);
  for (const s of spans) {
    expect(s.attributes).toMatchObject({
      job_id: run.jobId,
      client_id: FAULT_CLIENT.id,
      route: "f.http",
    });
    for (const key of Object.keys(s.attributes)) expect(ALLOWED_ATTRIBUTES.has(key)).toBe(true);
  }

  // Nothing any process exported holds the input, metadata, output, a secret or the token.
  const exported = otlp.rawBodies().join("\n");
  expect(exported).toContain(run.jobId);
  const secrets = [
    INPUT,
    METADATA,
    OUTPUT,
    EXECUTOR_SECRET,
    FAULT_CLIENT.secret,
    FAULT_CLIENT.token,
  ];
  for (const secret of secrets) {
    expect(exported).not.toContain(secret);
    expect(exported).not.toContain(secret.slice(6, 30));
  }
}, 90_000);
