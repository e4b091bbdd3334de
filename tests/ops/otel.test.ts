import { describe, expect, test } from "bun:test";
import { readStream } from "../../shared/bus/stream-reader.ts";
import { createTracing, type Tracing } from "../../shared/telemetry/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { createWorker } from "../../shared/worker/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { type ReceivedSpan, startOtlpReceiver, traceparentRecorders } from "../helpers/otlp.ts";
import { waitFor } from "../helpers/wait.ts";

const CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const CALLER_SPAN = "00f067aa0ba902b7";
const CALLER = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;
const TOKEN = "otel-token-0123456789abcdef";
/** Things that must never reach an exported span. */
const INPUT = "input-text-that-must-not-be-traced";
const METADATA = "metadata-that-must-not-be-traced";
const OUTPUT = "output-that-must-not-be-traced";
const CALLBACK_SECRET = generateWebhookSecret();
const EXECUTOR_SECRET = generateWebhookSecret();

const SPAN_KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

async function tracingTo(endpoint: string): Promise<Tracing> {
  return createTracing({
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
      OTEL_SERVICE_NAME: "switchyard-test",
      OTEL_BSP_SCHEDULE_DELAY: "100",
    },
    defaultServiceName: "unused",
    logger: captureLogger().logger,
  });
}

function one(spans: readonly ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found.map((s) => s.name)).toEqual([name]);
  return found[0] as ReceivedSpan;
}

async function waitSettled(hub: TestHub, jobId: string, withCallback: boolean) {
  await waitFor(
    "the job to settle",
    async () => {
      const res = await hub.request(`/jobs/${jobId}`, { token: TOKEN });
      const view = (await res.json()) as { status: string; callback?: { status: string } };
      const final = ["done", "error", "rejected"].includes(view.status);
      return final && (!withCallback || view.callback?.status === "delivered");
    },
    { timeoutMs: 15_000 },
  );
}

describe("OpenTelemetry traces", () => {
  test("one job with a callback is one trace: accept, dispatch, execute, callback, project", async () => {
    const { seen, executor, receiver, stop } = traceparentRecorders(OUTPUT);
    await using otlp = startOtlpReceiver();
    const tracing = await tracingTo(otlp.endpoint);
    expect(tracing.enabled).toBe(true);
    try {
      const hub = await startHub({
        clients: [
          { id: "tracer", token: TOKEN, routes: ["traced.*"], callbackSecrets: [CALLBACK_SECRET] },
        ],
        yaml: `
callbacks: { allow_cidrs: ["127.0.0.1/32"], timeout: 2s }
routes:
  - key: traced.http
    executor:
      kind: http
      url: http://127.0.0.1:${executor.port}/task
      secret: ${EXECUTOR_SECRET}
`,
        tracing,
      });
      let jobId = "";
      let accepted = "";
      try {
        const res = await hub.run(
          {
            request_id: "otel-1",
            route: "traced.http",
            input: INPUT,
            metadata: { note: METADATA },
            callback_url: `http://127.0.0.1:${receiver.port}/cb`,
          },
          TOKEN,
          { traceparent: CALLER },
        );
        expect(res.status).toBe(202);
        accepted = res.headers.get("traceparent") ?? "";
        jobId = ((await res.json()) as { job_id: string }).job_id;
        await waitSettled(hub, jobId, true);
        // Every event of the job carries the accept span's context.
        for await (const record of readStream(hub.running.hub.js, {
          filterSubject: `sy.evt.tracer.${jobId}.*`,
        })) {
          expect(record.headers.traceparent).toBe(accepted);
        }
      } finally {
        await hub.stop();
      }
      const spans = await waitFor(
        "the project span",
        () => otlp.spans().some((s) => s.name === "project") && otlp.spans(),
      );

      // One trace: the caller's.
      expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([CALLER_TRACE]));
      const accept = one(spans, "POST /run");
      const dispatch = one(spans, "dispatch");
      const execute = one(spans, "execute http");
      const callback = one(spans, "callback");
      const projects = spans.filter((s) => s.name === "project");
      expect(projects.length).toBeGreaterThan(0);
      expect(spans.length).toBe(4 + projects.length);

      // Parents: the caller → accept → dispatch → execute; callback and view writes continue the
      // job's context (the accept span), which every event carries.
      expect(accept.parentSpanId).toBe(CALLER_SPAN);
      expect(dispatch.parentSpanId).toBe(accept.spanId);
      expect(execute.parentSpanId).toBe(dispatch.spanId);
      expect(callback.parentSpanId).toBe(accept.spanId);
      for (const p of projects) expect(p.parentSpanId).toBe(accept.spanId);
      expect(accepted).toBe(`00-${CALLER_TRACE}-${accept.spanId}-01`);
      // Outgoing requests carry their own span, so the executor's and receiver's spans nest under them.
      expect(seen.task).toBe(`00-${CALLER_TRACE}-${execute.spanId}-01`);
      expect(seen.callback).toBe(`00-${CALLER_TRACE}-${callback.spanId}-01`);

      expect([accept, dispatch, execute, callback].map((s) => s.kind)).toEqual([
        SPAN_KIND.server,
        SPAN_KIND.consumer,
        SPAN_KIND.client,
        SPAN_KIND.client,
      ]);
      for (const span of spans) {
        expect(span.service).toBe("switchyard-test");
        expect(span.attributes).toMatchObject({
          job_id: jobId,
          client_id: "tracer",
          route: "traced.http",
        });
        expect(span.statusCode).not.toBe(2);
      }
      expect(accept.attributes.outcome).toBe("accepted");
      expect(execute.attributes).toMatchObject({ attempt: 1, outcome: "done" });
      expect(callback.attributes).toMatchObject({
        attempt: 1,
        outcome: "delivered",
        "http.response.status_code": 204,
      });

      // Nothing exported holds the input, metadata, output, secrets or the token.
      const exported = otlp.rawBodies().join("\n");
      expect(exported.length).toBeGreaterThan(0);
      for (const secret of [INPUT, METADATA, OUTPUT, CALLBACK_SECRET, EXECUTOR_SECRET, TOKEN]) {
        expect(exported).not.toContain(secret);
        expect(exported).not.toContain(secret.slice(6, 30));
      }
      // The default encoding is OTLP/HTTP protobuf.
      expect(new Set(otlp.contentTypes())).toEqual(new Set(["application/x-protobuf"]));
    } finally {
      await tracing.shutdown();
      stop();
    }
  });

  test("builtin runs and NATS hand-overs are spans under dispatch; a run without a traceparent starts a trace", async () => {
    await using otlp = startOtlpReceiver();
    const tracing = await tracingTo(otlp.endpoint);
    const hub = await startHub({
      clients: [{ id: "tracer", token: TOKEN, routes: ["traced.*"] }],
      yaml: `
routes:
  - key: traced.echo
    executor: { kind: builtin, name: echo }
  - key: traced.worker
    executor: { kind: nats, ack_wait: 2s }
  - key: traced.late
    deadline: 1s
    executor: { kind: nats, ack_wait: 2s }
`,
      tracing,
    });
    const worker = createWorker({
      nc: hub.nats.nc,
      route: "traced.worker",
      concurrency: 1,
      handler: async (task) => task.input.length,
    });
    await worker.start();
    const jobs: Record<string, string> = {};
    const accepted: Record<string, string> = {};
    try {
      // traced.late has no worker: its deadline timer ends it.
      for (const route of ["traced.echo", "traced.worker", "traced.late"]) {
        const res = await hub.run({ request_id: `r-${route}`, route, input: INPUT }, TOKEN);
        expect(res.status).toBe(202);
        jobs[route] = ((await res.json()) as { job_id: string }).job_id;
        accepted[route] = res.headers.get("traceparent") ?? "";
        await waitSettled(hub, jobs[route] as string, false);
      }
      // Every event carries the job's context, the deadline timer's job.error included.
      for (const route of Object.keys(jobs)) {
        const types: string[] = [];
        for await (const record of readStream(hub.running.hub.js, {
          filterSubject: `sy.evt.tracer.${jobs[route]}.*`,
        })) {
          types.push(record.headers["Sy-Event-Type"] ?? "");
          expect(record.headers.traceparent).toBe(accepted[route] as string);
        }
        if (route === "traced.late") expect(types).toContain("job.error");
      }
    } finally {
      await worker.stop();
      await hub.stop();
      await tracing.shutdown();
    }
    const expectations = [
      { route: "traced.echo", name: "execute builtin", kind: SPAN_KIND.internal },
      { route: "traced.worker", name: "hand over nats", kind: SPAN_KIND.producer },
      { route: "traced.late", name: "hand over nats", kind: SPAN_KIND.producer },
    ];
    for (const { route, name, kind } of expectations) {
      const spans = otlp.spans().filter((s) => s.attributes.job_id === jobs[route]);
      const accept = one(spans, "POST /run");
      expect(accept.parentSpanId).toBe("");
      expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([accept.traceId]));
      const dispatch = one(spans, "dispatch");
      const run = one(spans, name);
      expect(dispatch.parentSpanId).toBe(accept.spanId);
      expect(run.parentSpanId).toBe(dispatch.spanId);
      expect(run.kind).toBe(kind);
      const projects = spans.filter((s) => s.name === "project");
      expect(projects.length).toBeGreaterThan(0);
      for (const p of projects) expect(p.parentSpanId).toBe(accept.spanId);
      for (const s of spans) expect(s.attributes.route).toBe(route);
    }
    expect(otlp.rawBodies().join("\n")).not.toContain(INPUT);
  });

  test("OTEL_EXPORTER_OTLP_PROTOCOL=http/json sends OTLP/JSON to the traces endpoint", async () => {
    await using otlp = startOtlpReceiver();
    const tracing = await createTracing({
      env: {
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${otlp.endpoint}/v1/traces`,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
        OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=test",
      },
      defaultServiceName: "switchyard-ingress",
      logger: captureLogger().logger,
    });
    const parent = tracing.start("parent", { kind: "server", attributes: { job_id: "job_a" } });
    const child = tracing.start("child", {
      parent: parent.traceparent,
      attributes: { attempt: 2 },
    });
    child.end(new TypeError("boom with details"));
    parent.end();
    await tracing.shutdown();
    expect(otlp.contentTypes()).toEqual(["application/json"]);
    const spans = otlp.spans();
    const p = one(spans, "parent");
    const c = one(spans, "child");
    expect(p.service).toBe("switchyard-ingress");
    expect(c.parentSpanId).toBe(p.spanId);
    expect(c.traceId).toBe(p.traceId);
    expect(c.attributes).toEqual({ attempt: 2, "error.type": "TypeError" });
    expect(c.statusCode).toBe(2);
    // An error's message is never exported, only its type.
    expect(otlp.rawBodies().join("")).not.toContain("boom");
    expect(otlp.rawBodies().join("")).toContain("deployment.environment");
  });
});
