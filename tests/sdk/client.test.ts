import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import {
  AuthenticationError,
  ConflictError,
  createSwitchyardClient,
  InvalidRequestError,
  NotFoundError,
  newRequestId,
  PermissionDeniedError,
  RateLimitError,
  type RunRequest,
  ServerError,
  SwitchyardApiError,
  type SwitchyardClientOptions,
  SwitchyardNetworkError,
  systemClock,
  WaitForJobTimeoutError,
} from "../../sdk/src/index.ts";
import { type SdkHub, startSdkHub } from "./hub.ts";

let sdk: SdkHub;
beforeAll(async () => {
  sdk = await startSdkHub();
});
afterAll(() => sdk.stop());

/** Real time; every sleep the client asks for is recorded. */
function recordingClock() {
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => systemClock.now(),
    sleep: (ms: number, signal?: AbortSignal) => {
      sleeps.push(ms);
      return systemClock.sleep(ms, signal);
    },
  };
}

const client = (extra: Partial<SwitchyardClientOptions> = {}) =>
  createSwitchyardClient({
    baseUrl: sdk.baseUrl,
    token: sdk.clients.acme.token,
    retry: { baseDelayMs: 10, maxDelayMs: 40 },
    ...extra,
  });
/** The same client, through the fault proxy in front of the hub. */
const proxied = (extra: Partial<SwitchyardClientOptions> = {}) =>
  client({ baseUrl: sdk.proxy.url, ...extra });

const request = (route = "demo.echo", input = "summarise the ticket"): RunRequest => ({
  request_id: newRequestId(),
  route,
  input,
  metadata: { principal: { id: "u1", tenant: "t1" } },
});

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    (value) => {
      throw new Error(`expected a failure, got ${JSON.stringify(value)}`);
    },
    (err: unknown) => err,
  );
}

describe("run", () => {
  test("a new request is accepted (202); the same request again returns that job (200)", async () => {
    const c = client();
    const req = request();
    const first = await c.run(req);
    expect(first.created).toBe(true);
    expect(first.job).toMatchObject({ request_id: req.request_id, route: "demo.echo" });
    expect(first.location).toBe(`/jobs/${first.job.job_id}`);
    const again = await c.run(req);
    expect(again.created).toBe(false);
    expect(again.job.job_id).toBe(first.job.job_id);
  });

  test("an answer lost after the hub accepted is retried with the same bytes and finds the job", async () => {
    const req = request();
    sdk.proxy.addFault({ method: "POST", requestId: req.request_id, action: "hold" });
    const result = await proxied({ requestTimeoutMs: 500 }).run(req);
    const bodies = sdk.proxy.seen({ requestId: req.request_id }).map((s) => s.body);
    expect(bodies).toHaveLength(2);
    expect(bodies[1]).toBe(bodies[0] ?? "");
    // The hub stored the first attempt, so the retry is answered with that job (200).
    expect(result.created).toBe(false);
    expect(result.job.request_id).toBe(req.request_id);
  });

  test("503 with Retry-After is waited out, then the same request is accepted", async () => {
    const req = request();
    sdk.proxy.addFault({
      method: "POST",
      requestId: req.request_id,
      action: "status",
      status: 503,
      retryAfter: 1,
    });
    const clock = recordingClock();
    const result = await proxied({ clock }).run(req);
    expect(result.created).toBe(true);
    expect(clock.sleeps).toHaveLength(1);
    expect(clock.sleeps[0]).toBeGreaterThanOrEqual(1000);
    const seen = sdk.proxy.seen({ requestId: req.request_id });
    expect(seen).toHaveLength(2);
    expect(new Set(seen.map((s) => s.body)).size).toBe(1);
  });

  test("the hub's own 429 with a long Retry-After is not waited out", async () => {
    const c = client({ token: sdk.clients.limited.token, retry: { maxRetryAfterMs: 1000 } });
    await c.run(request());
    const error = await failure(c.run(request()));
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({ status: 429, code: "rate_limited", retryable: true });
    expect((error as RateLimitError).retryAfterSec).toBeGreaterThan(1);
  });

  test("network failures are retried a bounded number of times, naming the request_id", async () => {
    const dead = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    const baseUrl = `http://127.0.0.1:${dead.port}`;
    await dead.stop(true);
    const clock = recordingClock();
    const c = client({
      baseUrl,
      clock,
      retry: { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 30 },
    });
    const req = request();
    const error = await failure(c.run(req));
    expect(error).toBeInstanceOf(SwitchyardNetworkError);
    expect(error).toMatchObject({ kind: "network", attempts: 3, requestId: req.request_id });
    expect(String(error)).toContain(`same request_id "${req.request_id}"`);
    expect(clock.sleeps).toHaveLength(2);
    for (const ms of clock.sleeps) expect(ms).toBeLessThanOrEqual(30);
  });

  test("a request_id is never invented", async () => {
    const c = client({ baseUrl: "http://127.0.0.1:9" });
    const missing = { route: "demo.echo", input: "x" } as unknown as RunRequest;
    await expect(c.run(missing)).rejects.toThrow(/needs a request_id/);
    await expect(c.run({ ...request(), request_id: "  " })).rejects.toThrow(TypeError);
    const a = newRequestId();
    expect(a).toMatch(/^[0-9a-f-]{36}$/);
    expect(newRequestId()).not.toBe(a);
  });
});

describe("problems become typed errors", () => {
  test("an unknown field is InvalidRequestError invalid_request with a pointer", async () => {
    const bad = { ...request(), callback: "https://x.example" } as RunRequest;
    const error = await failure(client().run(bad));
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error).toBeInstanceOf(SwitchyardApiError);
    expect(error).toMatchObject({ status: 400, code: "invalid_request", retryable: false });
    expect((error as InvalidRequestError).errors.map((e) => e.pointer)).toContain("/callback");
  });

  test("the same request_id with another body is ConflictError request_id_conflict, sent once", async () => {
    const c = client();
    const req = request();
    await c.run(req);
    const error = await failure(c.run({ ...req, input: "other" }));
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ status: 409, code: "request_id_conflict" });
  });

  test("a route the client may not use is PermissionDeniedError route_not_allowed", async () => {
    const error = await failure(client().run(request("billing.invoice")));
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect(error).toMatchObject({ status: 403, code: "route_not_allowed" });
  });

  test("a bad token is AuthenticationError; an unknown job NotFoundError job_not_found", async () => {
    const denied = await failure(client({ token: "wrong-token" }).getJob("job_x"));
    expect(denied).toBeInstanceOf(AuthenticationError);
    expect(denied).toMatchObject({ status: 401, code: "unauthorized" });
    const missing = await failure(client().getJob("job_AAAAAAAAAAAAAAAAAAAAAA"));
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing).toMatchObject({ status: 404, code: "job_not_found" });
  });

  test("another client's job answers the same 404", async () => {
    const { job } = await client().run(request());
    const other = client({ token: sdk.clients.globex.token });
    await expect(other.getJob(job.job_id)).rejects.toMatchObject({ code: "job_not_found" });
  });

  test("a 503 that outlasts every attempt is a ServerError with its Retry-After", async () => {
    const req = request();
    sdk.proxy.addFault({
      method: "POST",
      requestId: req.request_id,
      action: "status",
      status: 503,
      retryAfter: 0,
      times: 2,
    });
    const error = await failure(proxied({ retry: { maxAttempts: 2, baseDelayMs: 1 } }).run(req));
    expect(error).toBeInstanceOf(ServerError);
    expect(error).toMatchObject({ status: 503, code: "unavailable", retryAfterSec: 0 });
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
      fetch: () => Response.redirect(`http://127.0.0.1:${target.port}/jobs/x`, 302),
    });
    try {
      const c = client({ baseUrl: `http://127.0.0.1:${redirector.port}` });
      await expect(c.getJob("x")).rejects.toMatchObject({ status: 302, code: "http_302" });
      expect(targetHits).toBe(0);
    } finally {
      await Promise.all([redirector.stop(true), target.stop(true)]);
    }
  });
});

describe("waitForJob", () => {
  test("returns the final record, polling at doubling, capped intervals", async () => {
    const clock = recordingClock();
    const c = client({ clock });
    const { job } = await c.run(request("demo.sleep", "hello"));
    const done = await c.waitForJob(job.job_id, { initialIntervalMs: 20, maxIntervalMs: 80 });
    expect(done).toMatchObject({ job_id: job.job_id, status: "done", output: "hello" });
    expect(done.completed_at).toBeString();
    // demo.sleep takes 200 ms: at least 20 + 40 + 80 of polling, every interval on the schedule.
    expect(clock.sleeps.length).toBeGreaterThanOrEqual(3);
    expect(clock.sleeps).toEqual(clock.sleeps.map((_, i) => Math.min(80, 20 * 2 ** i)));
  });

  test("honours Retry-After while polling", async () => {
    const clock = recordingClock();
    const c = proxied({ clock });
    const { job } = await c.run(request());
    sdk.proxy.addFault({
      method: "GET",
      path: `/jobs/${job.job_id}`,
      action: "status",
      status: 429,
      retryAfter: 1,
    });
    const done = await c.waitForJob(job.job_id, { initialIntervalMs: 10 });
    expect(done.status).toBe("done");
    expect(clock.sleeps[0]).toBe(1000);
  });

  test("gives up after timeoutMs with the last status seen; the job goes on", async () => {
    const c = client();
    const { job } = await c.run(request("demo.slow"));
    const error = await failure(
      c.waitForJob(job.job_id, { timeoutMs: 300, initialIntervalMs: 20, maxIntervalMs: 50 }),
    );
    expect(error).toBeInstanceOf(WaitForJobTimeoutError);
    const last = (error as WaitForJobTimeoutError).lastJob;
    expect(["queued", "dispatched", "running"]).toContain(last?.status ?? "none");
    expect((await c.getJob(job.job_id)).status).not.toBe("done");
  });

  test("stops when the signal aborts", async () => {
    const c = client();
    const { job } = await c.run(request("demo.slow"));
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("caller gave up")), 100);
    await expect(c.waitForJob(job.job_id, { signal: controller.signal })).rejects.toThrow(
      "caller gave up",
    );
  });

  test("a 404 ends waiting at once", async () => {
    const clock = recordingClock();
    const error = await failure(client({ clock }).waitForJob("job_AAAAAAAAAAAAAAAAAAAAAA"));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(clock.sleeps).toEqual([]);
  });
});
