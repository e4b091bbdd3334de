import { afterAll, describe, expect, test } from "bun:test";
import {
  createSwitchyardClient,
  newRequestId,
  type RunRequest,
  SwitchyardApiError,
  type SwitchyardClientOptions,
  SwitchyardNetworkError,
  WaitForJobTimeoutError,
} from "../../sdk/index.ts";
import { fakeClock, startFakeApi } from "./fake-api.ts";

const TOKEN = "tok_test";
const api = startFakeApi(TOKEN);
afterAll(() => api.stop());

const client = (extra: Partial<SwitchyardClientOptions> = {}) =>
  createSwitchyardClient({
    baseUrl: api.baseUrl,
    token: TOKEN,
    clock: fakeClock(),
    retry: { baseDelayMs: 10, maxDelayMs: 40 },
    ...extra,
  });

const request = (request_id: string, route = "demo"): RunRequest => ({
  request_id,
  route,
  input: "summarise the ticket",
  metadata: { principal: { id: "u1", tenant: "t1" } },
});

const bodiesFor = (requestId: string) =>
  api.seen.filter((s) => s.method === "POST" && JSON.parse(s.body).request_id === requestId);

describe("run", () => {
  test("a new request is accepted (202); the same request again returns the job (200)", async () => {
    const c = client();
    const first = await c.run(request("r-replay"));
    expect(first.created).toBe(true);
    expect(first.job).toMatchObject({ status: "queued", request_id: "r-replay", route: "demo" });
    if (first.created) expect(first.location).toBe(`/jobs/${first.job.job_id}`);
    const again = await c.run(request("r-replay"));
    expect(again.created).toBe(false);
    expect(again.job.job_id).toBe(first.job.job_id);
  });

  test("a slow first answer is retried with the same request_id and body", async () => {
    const c = client({ requestTimeoutMs: 300 });
    const result = await c.run(request("slow-1"));
    const bodies = bodiesFor("slow-1").map((s) => s.body);
    expect(bodies).toHaveLength(2);
    expect(bodies[1]).toBe(bodies[0] ?? "");
    // The server had accepted the first attempt, so the retry finds that job.
    expect(result.created).toBe(false);
    expect(result.job.request_id).toBe("slow-1");
  });

  test("503 with Retry-After is waited out, then the same request succeeds", async () => {
    const clock = fakeClock();
    const result = await client({ clock }).run(request("busy-1"));
    expect(result.created).toBe(true);
    expect(clock.sleeps).toHaveLength(1);
    expect(clock.sleeps[0]).toBeGreaterThanOrEqual(1000);
    expect(new Set(bodiesFor("busy-1").map((s) => s.body)).size).toBe(1);
    expect(bodiesFor("busy-1")).toHaveLength(2);
  });

  test("a Retry-After beyond maxRetryAfterMs is not waited out", async () => {
    const clock = fakeClock();
    const c = client({ clock, retry: { maxRetryAfterMs: 500 } });
    const error = await c.run(request("busy-2")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchyardApiError);
    expect(error).toMatchObject({ status: 503, retryAfterSec: 1 });
    expect(clock.sleeps).toHaveLength(0);
  });

  test("network failures are retried a bounded number of times, naming the request_id", async () => {
    const dead = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    const baseUrl = `http://127.0.0.1:${dead.port}/v1`;
    await dead.stop(true);
    const clock = fakeClock();
    const c = client({
      baseUrl,
      clock,
      retry: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 150 },
    });
    const error = await c.run(request("r-offline")).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchyardNetworkError);
    expect(error).toMatchObject({ kind: "network", attempts: 3, requestId: "r-offline" });
    expect(String(error)).toContain('same request_id "r-offline"');
    expect(clock.sleeps).toHaveLength(2);
    for (const ms of clock.sleeps) expect(ms).toBeLessThanOrEqual(150);
  });

  test("a request_id is never invented", async () => {
    const before = api.seen.length;
    const c = client();
    const missing = { route: "demo", input: "x" } as unknown as RunRequest;
    await expect(c.run(missing)).rejects.toThrow(/needs a request_id/);
    await expect(c.run({ ...request(""), request_id: "  " })).rejects.toThrow(TypeError);
    expect(api.seen.length).toBe(before);
    const a = newRequestId();
    expect(a).toMatch(/^[0-9a-f-]{36}$/);
    expect(newRequestId()).not.toBe(a);
  });
});

describe("problems become SwitchyardApiError", () => {
  test("validation errors carry code and field pointers", async () => {
    const bad = { ...request("r-bad"), callback: "https://x.example" } as RunRequest;
    const error = await client()
      .run(bad)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SwitchyardApiError);
    expect(error).toMatchObject({
      status: 400,
      code: "validation_failed",
      title: "Invalid run request",
      detail: "unknown top-level field",
      errors: [{ pointer: "/callback", message: "Unexpected property" }],
    });
  });

  test("the same request_id with a different body is a 409 conflict, not retried", async () => {
    const c = client();
    await c.run(request("r-conflict"));
    const error = await c
      .run({ ...request("r-conflict"), input: "other" })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 409, code: "idempotency_conflict" });
    expect(bodiesFor("r-conflict")).toHaveLength(2);
  });

  test("a redirect is not followed and becomes an error", async () => {
    let targetHits = 0;
    const target = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => {
        targetHits += 1;
        return Response.json({ job_id: "x", status: "done" });
      },
    });
    const redirector = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => Response.redirect(`http://127.0.0.1:${target.port}/v1/jobs/x`, 302),
    });
    try {
      const c = client({ baseUrl: `http://127.0.0.1:${redirector.port}/v1` });
      await expect(c.getJob("x")).rejects.toMatchObject({ status: 302, code: "http_302" });
      expect(targetHits).toBe(0);
    } finally {
      await Promise.all([redirector.stop(true), target.stop(true)]);
    }
  });

  test("unknown job is 404 job_not_found; a bad token is 401", async () => {
    await expect(client().getJob("job_missing")).rejects.toMatchObject({
      status: 404,
      code: "job_not_found",
    });
    await expect(client({ token: "wrong" }).getJob("job_1")).rejects.toMatchObject({
      status: 401,
      code: "unauthorized",
    });
  });
});

describe("waitForJob", () => {
  test("follows queued → running → done with growing, capped intervals", async () => {
    const clock = fakeClock();
    const c = client({ clock });
    const { job } = await c.run(request("r-wait"));
    const done = await c.waitForJob(job.job_id, { initialIntervalMs: 100, maxIntervalMs: 150 });
    expect(done.status).toBe("done");
    expect(done.output).toEqual({ answer: 42 });
    expect(api.statusesServed(job.job_id)).toEqual(["queued", "running", "done"]);
    expect(clock.sleeps).toEqual([100, 150]);
  });

  test("honours Retry-After while polling", async () => {
    const clock = fakeClock();
    const c = client({ clock });
    const { job } = await c.run(request("r-throttled", "throttled-poll"));
    const done = await c.waitForJob(job.job_id, { initialIntervalMs: 100 });
    expect(done.status).toBe("done");
    expect(clock.sleeps[0]).toBe(3000);
  });

  test("gives up after timeoutMs with the last status seen", async () => {
    const clock = fakeClock();
    const c = client({ clock });
    const { job } = await c.run(request("r-stuck", "stuck"));
    const error = await c
      .waitForJob(job.job_id, { timeoutMs: 2_000, initialIntervalMs: 200, maxIntervalMs: 800 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitForJobTimeoutError);
    expect((error as WaitForJobTimeoutError).lastJob?.status).toBe("running");
    expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBe(2_000);
  });

  test("stops when the signal aborts", async () => {
    const c = client();
    const { job } = await c.run(request("r-abort", "stuck"));
    const controller = new AbortController();
    controller.abort(new Error("caller gave up"));
    await expect(c.waitForJob(job.job_id, { signal: controller.signal })).rejects.toThrow(
      "caller gave up",
    );
  });

  test("a 404 ends waiting at once", async () => {
    await expect(client().waitForJob("job_nope")).rejects.toBeInstanceOf(SwitchyardApiError);
  });
});
