import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { hashToken } from "../../shared/auth/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { createWorker, TaskFailedError, type Worker } from "../../shared/worker/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";
import { eventTypes, jobEvents, startTaskServer, type TaskServer, waitFinal } from "./helpers.ts";

const CLIENT = { id: "ops", token: "ops-token-0123456789abcdef", routes: ["x.*"] };
const SECRET = generateWebhookSecret();
const ASYNC_TOKEN = "executor-async-token-0123456789";
const OTHER_TOKEN = "executor-other-token-0123456789";

let hub: TestHub;
let server: TaskServer;
let worker: Worker;
let seq = 0;
const rid = () => `exec-${Date.now()}-${seq++}`;

/** POSTs of x.capped in flight now, and the most seen at once. */
const capped = { now: 0, max: 0 };

/** What the test executor answers, by route. */
async function answer(
  task: { json: { route: string; input: string } },
  nth: number,
): Promise<Response> {
  switch (task.json.route) {
    case "x.capped": {
      capped.now++;
      capped.max = Math.max(capped.max, capped.now);
      await Bun.sleep(50);
      capped.now--;
      return Response.json({ output: task.json.input });
    }
    case "x.http":
      return Response.json({ output: { echoed: task.json.input } });
    case "x.flaky":
      return nth <= 2 ? new Response("boom", { status: 500 }) : Response.json({ output: "third" });
    case "x.refuse":
      return new Response("no", { status: 422 });
    default:
      return new Response(null, { status: 202 });
  }
}

function httpRoute(key: string, extra = "", token?: string): string {
  return `
  - key: ${key}
    ${extra}
    executor:
      kind: http
      url: ${server.url}
      secret: "${SECRET}"
      timeout: 2s
      retry_backoff: [100ms]
      token_sha256: ${JSON.stringify(token ? [hashToken(token)] : [])}`;
}

beforeAll(async () => {
  server = startTaskServer(answer);
  hub = await startHub({
    clients: [CLIENT],
    yaml: `
routes:
  - key: x.echo
    executor: { kind: builtin, name: echo }
  - key: x.sleep
    executor: { kind: builtin, name: sleep, sleep_ms: 100 }
  - key: x.instant
    executor: { kind: builtin, name: sleep, sleep_ms: 0 }
  - key: x.off
    enabled: false
    executor: { kind: builtin, name: echo }
  - key: x.worker
    executor: { kind: nats, ack_wait: 2s }
${httpRoute("x.http")}
${httpRoute("x.flaky")}
${httpRoute("x.refuse")}
${httpRoute("x.async", "", ASYNC_TOKEN)}
${httpRoute("x.other", "", OTHER_TOKEN)}
${httpRoute("x.late", "deadline: 1s", ASYNC_TOKEN)}
${httpRoute("x.capped", "concurrency: 2")}
`,
  });
  worker = createWorker({
    nc: hub.nats.nc,
    route: "x.worker",
    concurrency: 2,
    handler: async (task) => {
      if (task.input === "fail") throw new TaskFailedError("bad_input", "cannot work on that");
      if (task.input === "nothing") return undefined;
      return task.input.toUpperCase();
    },
  });
  await worker.start();
});
afterAll(async () => {
  await worker.stop();
  await hub.stop();
  await server.stop();
});

async function submit(route: string, input = "hello"): Promise<string> {
  const res = await hub.run({ request_id: rid(), route, input }, CLIENT.token);
  expect(res.status).toBe(202);
  return ((await res.json()) as { job_id: string }).job_id;
}

const get = (path: string) => hub.request(path, { token: CLIENT.token });
const report = (jobId: string, token: string, body: unknown) =>
  fetch(`${hub.baseUrl}/executor/v1/jobs/${jobId}/events`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("builtin targets", () => {
  test("echo → done with the input", async () => {
    const jobId = await submit("x.echo", "hi");
    expect(await waitFinal(get, jobId)).toMatchObject({ status: "done", output: "hi" });
    expect(await eventTypes(hub.nats.nc, CLIENT.id, jobId)).toEqual(["job.done"]);
  });

  test("sleep → running, then done", async () => {
    const jobId = await submit("x.sleep", "zz");
    expect(await waitFinal(get, jobId)).toMatchObject({ status: "done", output: "zz" });
    expect(await eventTypes(hub.nats.nc, CLIENT.id, jobId)).toEqual(["job.running", "job.done"]);
  });

  test("sleep with sleep_ms 0 → done, without a job.running nobody could see", async () => {
    const jobId = await submit("x.instant", "now");
    expect(await waitFinal(get, jobId)).toMatchObject({ status: "done", output: "now" });
    expect(await eventTypes(hub.nats.nc, CLIENT.id, jobId)).toEqual(["job.done"]);
  });

  test("a disabled route → rejected route_disabled", async () => {
    const jobId = await submit("x.off");
    const job = await waitFinal(get, jobId);
    expect(job).toMatchObject({ status: "rejected", error: { code: "route_disabled" } });
    expect(await eventTypes(hub.nats.nc, CLIENT.id, jobId)).toEqual(["job.rejected"]);
  });
});

describe("http target", () => {
  test("200 with a JSON result → done with the output, and no other status event", async () => {
    const jobId = await submit("x.http", "ping");
    expect(await waitFinal(get, jobId)).toMatchObject({
      status: "done",
      output: { echoed: "ping" },
    });
    const events = await jobEvents(hub.nats.nc, CLIENT.id, jobId);
    expect(events.map((e) => e.type)).toEqual(["job.done"]);
    // The final event carries what the callback service needs, so it reads nothing.
    expect(events[0]?.data).toMatchObject({
      output: { echoed: "ping" },
      run: { route: "x.http", request_id: expect.any(String), created_at: expect.any(String) },
    });
  });

  test("the task is signed: the standardwebhooks package verifies it", async () => {
    const jobId = await submit("x.http", "signed");
    await waitFinal(get, jobId);
    const [task] = server.forJob(jobId);
    if (!task) throw new Error("the executor got no task");
    expect(task.headers["webhook-id"]).toBe(jobId);
    expect(task.json).toMatchObject({ job_id: jobId, route: "x.http", input: "signed" });
    expect(task.json).not.toHaveProperty("client_id");
    expect(typeof task.json.deadline).toBe("string");
    const verified = new Webhook(SECRET).verify(task.body, task.headers);
    expect(verified).toMatchObject({ job_id: jobId });
    expect(() => new Webhook(generateWebhookSecret()).verify(task.body, task.headers)).toThrow();
  });

  test("500, 500, then 200 → done after 3 attempts, each failure recorded", async () => {
    const jobId = await submit("x.flaky");
    expect(await waitFinal(get, jobId)).toMatchObject({ status: "done", output: "third" });
    const events = await jobEvents(hub.nats.nc, CLIENT.id, jobId);
    expect(events.map((e) => e.type)).toEqual([
      "job.attempt_failed",
      "job.attempt_failed",
      "job.done",
    ]);
    expect(events.slice(0, 2).map((e) => e.data)).toEqual(
      [1, 2].map((attempt) => ({
        target: "http",
        attempt,
        reason: "http_500",
        status_code: 500,
        next_attempt_at: expect.any(String),
      })),
    );
    expect(events[2]?.data).toMatchObject({ output: "third", attempts: 3 });
    expect(server.forJob(jobId).map((t) => t.headers["switchyard-attempt"])).toEqual([
      "1",
      "2",
      "3",
    ]);
  });

  test("a 4xx answer → rejected executor_refused", async () => {
    const jobId = await submit("x.refuse");
    expect(await waitFinal(get, jobId)).toMatchObject({
      status: "rejected",
      error: { code: "executor_refused" },
    });
  });

  test("202, then reports running and done → done", async () => {
    const jobId = await submit("x.async", "later");
    await waitFor("the task to reach the executor", () => server.forJob(jobId).length === 1);
    await waitFor("the dispatch to be recorded", async () =>
      (await eventTypes(hub.nats.nc, CLIENT.id, jobId)).includes("job.dispatched"),
    );
    const running = await report(jobId, ASYNC_TOKEN, { type: "running" });
    expect(running.status).toBe(200);
    const done = await report(jobId, ASYNC_TOKEN, { type: "done", output: { n: 1 } });
    expect(done.status).toBe(200);
    expect(await done.json()).toEqual({ job_id: jobId, status: "done" });
    expect(await waitFinal(get, jobId)).toMatchObject({ status: "done", output: { n: 1 } });
    expect(await eventTypes(hub.nats.nc, CLIENT.id, jobId)).toEqual([
      "job.dispatched",
      "job.running",
      "job.done",
    ]);
    // A repeated report after the end changes nothing.
    const again = await report(jobId, ASYNC_TOKEN, {
      type: "error",
      error: { code: "x", message: "y" },
    });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { code: string }).code).toBe("job_state_conflict");
  });

  test("forged reports: a wrong token, or another route's token → refused, nothing changes", async () => {
    const jobId = await submit("x.async", "guarded");
    await waitFor("the dispatch to be recorded", async () =>
      (await eventTypes(hub.nats.nc, CLIENT.id, jobId)).includes("job.dispatched"),
    );
    const wrong = await report(jobId, "not-a-token", { type: "done", output: "forged" });
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get("content-type")).toBe("application/problem+json");
    const otherRoute = await report(jobId, OTHER_TOKEN, { type: "done", output: "forged" });
    expect(otherRoute.status).toBe(404);
    expect(((await otherRoute.json()) as { code: string }).code).toBe("job_not_found");
    const unknownJob = await report("job_AAAAAAAAAAAAAAAAAAAAAA", ASYNC_TOKEN, { type: "running" });
    expect(unknownJob.status).toBe(404);
    const badBody = await report(jobId, ASYNC_TOKEN, { type: "done", output: 1, extra: true });
    expect(badBody.status).toBe(400);
    expect(await eventTypes(hub.nats.nc, CLIENT.id, jobId)).toEqual(["job.dispatched"]);
    const view = (await (await get(`/jobs/${jobId}`)).json()) as { status: string };
    expect(view.status).toBe("dispatched");
  });

  test("a job that outlives its deadline → error deadline_exceeded", async () => {
    const jobId = await submit("x.late");
    const job = await waitFinal(get, jobId);
    expect(job).toMatchObject({ status: "error", error: { code: "deadline_exceeded" } });
    expect(await eventTypes(hub.nats.nc, CLIENT.id, jobId)).toEqual([
      "job.dispatched",
      "job.error",
    ]);
    // The executor's late report is refused: the watchdog's outcome stands.
    const late = await report(jobId, ASYNC_TOKEN, { type: "done", output: "too late" });
    expect(late.status).toBe(409);
  });
});

describe("concurrency and metrics", () => {
  test("a burst on a route with concurrency 2 never has more than 2 tasks in flight", async () => {
    const ids = await Promise.all(
      Array.from({ length: 12 }, (_, i) => submit("x.capped", `b${i}`)),
    );
    for (const id of ids) expect(await waitFinal(get, id)).toMatchObject({ status: "done" });
    expect(capped.max).toBeGreaterThanOrEqual(1);
    expect(capped.max).toBeLessThanOrEqual(2);
  });

  test("transitions and completion latency are counted per route", async () => {
    // The projector counts completions as it writes the views; GET may answer from the stream first.
    const body = await waitFor("the completions counted", async () => {
      const text = (await hub.running.metrics.expose()).body;
      return text.includes(
        'switchyard_jobs_completed_total{route="x.capped",status="done",code=""} 12',
      )
        ? text
        : undefined;
    });
    expect(body).toContain('switchyard_job_transitions_total{status="done",route="x.capped"} 12');
    expect(body).toMatch(/switchyard_job_completion_seconds_count\{route="x.capped"\} 12/);
    expect(body).toContain('switchyard_executor_in_flight{route="x.capped"} 0');
  });
});

describe("nats target", () => {
  test("a worker pulls the task → dispatched, running, done", async () => {
    const jobId = await submit("x.worker", "abc");
    expect(await waitFinal(get, jobId)).toMatchObject({ status: "done", output: "ABC" });
    expect(await eventTypes(hub.nats.nc, CLIENT.id, jobId)).toEqual([
      "job.dispatched",
      "job.running",
      "job.done",
    ]);
  });

  test("a handler that returns nothing → done with output null (JSON has no undefined)", async () => {
    const jobId = await submit("x.worker", "nothing");
    const view = await waitFinal(get, jobId);
    expect(view).toMatchObject({ status: "done", output: null });
    expect(await eventTypes(hub.nats.nc, CLIENT.id, jobId)).toEqual([
      "job.dispatched",
      "job.running",
      "job.done",
    ]);
  });

  test("a handler's TaskFailedError → error with its code", async () => {
    const jobId = await submit("x.worker", "fail");
    expect(await waitFinal(get, jobId)).toMatchObject({
      status: "error",
      error: { code: "bad_input" },
    });
  });
});
