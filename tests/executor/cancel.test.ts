/**
 * What a cancel does to the executors (issue 16): a NATS worker's handler sees its AbortSignal; a
 * result returned after the cancel is kept as job.result_discarded and does not change the job;
 * an HTTP POST in flight is aborted; an HTTP executor with a cancel_url receives one signed
 * cancel request; the completion callback is sent as for any final job.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jetstream } from "@nats-io/jetstream";
import { Webhook } from "standardwebhooks";
import { readStream } from "../../shared/bus/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { createWorker, TaskCancelledError, type Worker } from "../../shared/worker/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";
import { startTaskServer, type TaskServer, waitFinal } from "./helpers.ts";

const TOKEN = "acme-token-0123456789abcdef";
const SECRET = generateWebhookSecret();
const CALLBACK_SECRET = generateWebhookSecret();

let hub: TestHub;
let executor: TaskServer;
let worker: Worker;
const cancelRequests: { headers: Record<string, string>; body: string }[] = [];
const callbacks: string[] = [];
let cancelServer: ReturnType<typeof Bun.serve>;
const handlerSaw: Record<string, { reason: unknown; returnLate: boolean }> = {};

beforeAll(async () => {
  cancelServer = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const body = await req.text();
      if (path === "/cancel")
        cancelRequests.push({ headers: Object.fromEntries(req.headers), body });
      if (path === "/callback") callbacks.push(body);
      return new Response(null, { status: 204 });
    },
  });
  // The HTTP executor never answers in time: the POST stays in flight until it is aborted.
  executor = startTaskServer(() => new Promise<Response>(() => {}));
  const base = `http://127.0.0.1:${cancelServer.port}`;
  hub = await startHub({
    clients: [
      {
        id: "acme",
        token: TOKEN,
        routes: ["demo.*"],
        callbackSecrets: [CALLBACK_SECRET],
      },
    ],
    yaml: `
callbacks: { allow_cidrs: ["127.0.0.1/32"] }
routes:
  - key: demo.worker
    executor: { kind: nats }
  - key: demo.http
    executor: { kind: http, url: "${executor.url}", secret: "${SECRET}", timeout: 60s, cancel_url: "${base}/cancel" }
`,
  });
  worker = createWorker({
    nc: hub.nats.nc,
    route: "demo.worker",
    concurrency: 4,
    handler: async (task, ctx) => {
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
      const seen = { reason: ctx.signal.reason, returnLate: task.input === "late" };
      handlerSaw[task.job_id] = seen;
      if (seen.returnLate) return "a result after the cancel";
      throw ctx.signal.reason;
    },
  });
  await worker.start();
});

afterAll(async () => {
  await worker?.stop();
  await hub?.stop();
  await executor?.stop();
  cancelServer?.stop(true);
});

async function submit(requestId: string, route: string, input = "x"): Promise<string> {
  const base = `http://127.0.0.1:${cancelServer.port}`;
  const res = await hub.run(
    { request_id: requestId, route, input, callback_url: `${base}/callback` },
    TOKEN,
  );
  expect(res.status).toBe(202);
  return ((await res.json()) as { job_id: string }).job_id;
}

async function status(jobId: string): Promise<string> {
  const res = await hub.request(`/jobs/${jobId}`, { token: TOKEN });
  return ((await res.json()) as { status: string }).status;
}

async function events(jobId: string): Promise<JobEvent[]> {
  const out: JobEvent[] = [];
  for await (const r of readStream(jetstream(hub.nats.nc), {
    filterSubject: `sy.evt.acme.${jobId}.*`,
  })) {
    out.push(JSON.parse(new TextDecoder().decode(r.data)) as JobEvent);
  }
  return out;
}

const cancel = (jobId: string) =>
  hub.request(`/jobs/${jobId}/cancel`, { method: "POST", token: TOKEN });

describe("cancel reaches the executors", () => {
  test("a NATS worker's handler sees the abort; the job ends once, and its callback is sent", async () => {
    const jobId = await submit("worker-stops", "demo.worker");
    await waitFor("the worker to run it", async () => (await status(jobId)) === "running");
    expect((await cancel(jobId)).status).toBe(202);
    await waitFor("the handler to see the abort", () => handlerSaw[jobId]);
    expect(handlerSaw[jobId]?.reason).toBeInstanceOf(TaskCancelledError);
    const final = await waitFinal((p) => hub.request(p, { token: TOKEN }), jobId);
    expect(final.error).toMatchObject({ code: "cancelled" });
    await waitFor("the completion callback", () => callbacks.some((b) => b.includes(jobId)));
    const body = JSON.parse(callbacks.find((b) => b.includes(jobId)) ?? "{}");
    expect(body.data).toMatchObject({
      job_id: jobId,
      status: "error",
      error: { code: "cancelled" },
    });
    await waitFor("the worker to settle the task", () => worker.inFlight() === 0);
    const types = (await events(jobId)).map((e) => e.type);
    expect(types.filter((t) => t === "job.error")).toHaveLength(1);
    expect(types).not.toContain("job.result_discarded");
  });

  test("a result returned after the cancel is kept as history and does not change the job", async () => {
    const jobId = await submit("worker-late", "demo.worker", "late");
    await waitFor("the worker to run it", async () => (await status(jobId)) === "running");
    expect((await cancel(jobId)).status).toBe(202);
    await waitFor("the late result to be kept", async () =>
      (await events(jobId)).find((e) => e.type === "job.result_discarded"),
    );
    const discarded = (await events(jobId)).find((e) => e.type === "job.result_discarded");
    expect(discarded?.data).toEqual({
      result_type: "job.done",
      output: "a result after the cancel",
      reason: "cancelled",
    });
    expect(await status(jobId)).toBe("error");
  });

  test("an HTTP POST in flight is aborted, and the executor gets one signed cancel request", async () => {
    const jobId = await submit("http-cancel", "demo.http");
    await waitFor("the POST to reach the executor", () => executor.forJob(jobId).length === 1);
    expect((await cancel(jobId)).status).toBe(202);
    await waitFor("the cancel request", () => cancelRequests.find((r) => r.body.includes(jobId)));
    const request = cancelRequests.find((r) => r.body.includes(jobId));
    const verified = new Webhook(SECRET).verify(
      request?.body ?? "",
      request?.headers ?? {},
    ) as Record<string, unknown>;
    expect(verified).toMatchObject({ type: "job.cancelled", job_id: jobId, route: "demo.http" });
    expect(request?.headers["webhook-id"]).toBe(`cancel_${jobId}`);
    // The attempt was aborted: the executor's admission let go of the run at once.
    await waitFor("the attempt to end", async () => {
      const info = await hub.running.hub.jsm.consumers.info("SWITCHYARD_EVENTS", "executor");
      return info.num_ack_pending === 0;
    });
    const types = (await events(jobId)).map((e) => e.type);
    expect(types).toEqual(expect.arrayContaining(["run.requested", "job.error"]));
    expect(types).not.toContain("job.attempt_failed");
    expect(cancelRequests.filter((r) => r.body.includes(jobId))).toHaveLength(1);
  });
});
