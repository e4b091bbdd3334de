import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { webhookIdFor } from "../../services/callback/index.ts";
import { requestRedelivery } from "../../shared/callbacks/index.ts";
import { systemClock } from "../../shared/clock/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import type { Resolver } from "../../shared/net/index.ts";
import { waitFor } from "../helpers/wait.ts";
import {
  type CallbackHub,
  type Received,
  type Receiver,
  rid,
  SECRET_A,
  SECRET_B,
  SOLO_SECRET,
  startCallbackHub,
  startReceiver,
  TOKENS,
} from "./helpers.ts";

// rebind.test resolves to a loopback address outside the allowlist (127.0.0.1/32);
// allowed.test to the allowlisted 127.0.0.1. Nothing leaves 127.0.0.0/8.
const resolver: Resolver = async (name) => {
  if (name === "rebind.test") return [{ address: "127.0.0.2", family: 4 }];
  if (name === "allowed.test") return [{ address: "127.0.0.1", family: 4 }];
  throw Object.assign(new Error("not found"), { code: "ENOTFOUND" });
};

const status =
  (code: number, headers: Record<string, string> = {}) =>
  () =>
    new Response(null, { status: code, headers });

let hub: CallbackHub;
let receiver: Receiver;
let elsewhere: Receiver;

beforeAll(async () => {
  elsewhere = startReceiver();
  receiver = startReceiver({
    "/flaky": [status(500), status(500), status(200)],
    "/gone": [status(410)],
    "/moved": [status(302, { location: `${elsewhere.url}/target` })],
    "/busy": [status(503, { "retry-after": "1" }), status(204)],
    // A 200 whose body is far above the 64 KiB read cap, then a plain 204.
    "/huge-body": [() => new Response("x".repeat(4 * 1024 * 1024)), status(204)],
    // A 200 whose body never ends (the attempt budget is 2 s), then a plain 204.
    "/stall-body": [
      () =>
        new Response(
          new ReadableStream({
            start: (c) => c.enqueue(new TextEncoder().encode("ok")),
            pull: () => new Promise(() => {}),
          }),
        ),
      status(204),
    ],
  });
  hub = await startCallbackHub({ resolver });
});
afterAll(async () => {
  await hub.stop();
  await receiver.stop();
  await elsewhere.stop();
});

/** Submits a demo.echo run with a callback_url; returns the job id. */
async function submit(token: string, callbackUrl: string, input = "hello"): Promise<string> {
  const res = await hub.run(token, {
    request_id: rid(),
    route: "demo.echo",
    input,
    callback_url: callbackUrl,
  });
  expect(res.status).toBe(202);
  const jobId = ((await res.json()) as { job_id: string }).job_id;
  await hub.finish(token === TOKENS.solo ? "solo" : "acme", jobId, { output: input });
  return jobId;
}

async function settled(clientId: string, jobId: string): Promise<JobEvent[]> {
  return waitFor(`the callback of ${jobId} to settle`, async () => {
    const events = await hub.cbEvents(clientId, jobId);
    const last = events.at(-1);
    return last?.type === "callback.delivered" || last?.type === "callback.failed"
      ? events
      : undefined;
  });
}

/** Verifies with the independent standardwebhooks package; returns the parsed body. */
function verified(request: Received, secret: string): Record<string, unknown> {
  return new Webhook(secret).verify(request.body, request.headers) as Record<string, unknown>;
}

/** The events that record an attempt: a retried one, or the one that settled the callback. */
const attempts = (events: JobEvent[]) =>
  events.filter(
    (e) =>
      e.type === "callback.attempted" ||
      ((e.type === "callback.delivered" || e.type === "callback.failed") &&
        e.data.duration_ms !== undefined),
  );
const statusOf = (e: JobEvent | undefined) =>
  e && "status_code" in e.data ? e.data.status_code : undefined;

describe("delivery", () => {
  test("500, 500, 200: three attempts, delivered once, the same webhook-id, verified with both secrets", async () => {
    const jobId = await submit(TOKENS.acme, `${receiver.url}/flaky`);
    const events = await settled("acme", jobId);
    // Two failed attempts with their retry times, then the delivery: one event per attempt.
    expect(events.map((e) => e.type)).toEqual([
      "callback.attempted",
      "callback.attempted",
      "callback.delivered",
    ]);
    const tries = attempts(events);
    expect(tries.map(statusOf)).toEqual([500, 500, 200]);
    const first = tries[0];
    expect(first?.type === "callback.attempted" && first.data.next_attempt_at).toBeString();

    const got = receiver.on("/flaky").filter((r) => r.body.includes(jobId));
    expect(got).toHaveLength(3);
    expect(new Set(got.map((r) => r.headers["webhook-id"]))).toEqual(
      new Set([webhookIdFor(jobId)]),
    );
    for (const request of got) {
      expect(request.headers["user-agent"]).toBe("Switchyard");
      expect(request.headers["webhook-signature"]?.split(" ")).toHaveLength(2);
      const bodyA = verified(request, SECRET_A);
      expect(verified(request, SECRET_B)).toEqual(bodyA);
      expect(bodyA).toMatchObject({
        type: "job.completed",
        data: { job_id: jobId, route: "demo.echo", status: "done", output: "hello" },
      });
    }
    // Every retry carries the same bytes; only the timestamp header and signatures are per attempt.
    expect(new Set(got.map((r) => r.body)).size).toBe(1);

    const job = await waitFor("the view to show delivered", async () => {
      const view = await hub.job(TOKENS.acme, jobId);
      return (view.callback as { status?: string } | undefined)?.status === "delivered"
        ? view
        : undefined;
    });
    expect(job).toMatchObject({ status: "done", callback: { status: "delivered", attempts: 3 } });
    expect((job.callback as { last_attempt_at?: string }).last_attempt_at).toBeString();
  });

  test("a receiver's answer counts only when complete and small: huge or stalled bodies are failed attempts", async () => {
    // A failed attempt is callback.attempted with its error class; the delivery that follows is
    // recorded by callback.delivered itself.
    const errorClasses = (events: JobEvent[]) =>
      events.flatMap((e) => (e.type === "callback.attempted" ? [e.data.error_class] : []));
    const huge = await settled("acme", await submit(TOKENS.acme, `${receiver.url}/huge-body`));
    expect(huge.map((e) => e.type)).toEqual(["callback.attempted", "callback.delivered"]);
    expect(errorClasses(huge)).toEqual(["response_too_large"]);
    const stalled = await settled("acme", await submit(TOKENS.acme, `${receiver.url}/stall-body`));
    expect(stalled.map((e) => e.type)).toEqual(["callback.attempted", "callback.delivered"]);
    expect(errorClasses(stalled)).toEqual(["timeout"]);
  });

  test("a single-secret client is verified by the standardwebhooks package", async () => {
    const jobId = await submit(TOKENS.solo, `${receiver.url}/solo`);
    await settled("solo", jobId);
    const [request] = receiver.on("/solo").filter((r) => r.body.includes(jobId));
    expect(request).toBeDefined();
    expect(verified(request as Received, SOLO_SECRET)).toMatchObject({ data: { job_id: jobId } });
    expect(() => verified(request as Received, SECRET_A)).toThrow();
  });

  test("410 stops at once with callback.failed (gone); the job stays done", async () => {
    const jobId = await submit(TOKENS.acme, `${receiver.url}/gone`);
    const events = await settled("acme", jobId);
    expect(events.map((e) => e.type)).toEqual(["callback.failed"]);
    expect(events[0]).toMatchObject({ data: { attempts: 1, reason: "gone", status_code: 410 } });
    const job = await waitFor("the view to show failed", async () => {
      const view = await hub.job(TOKENS.acme, jobId);
      return (view.callback as { status?: string } | undefined)?.status === "failed"
        ? view
        : undefined;
    });
    expect(job.status).toBe("done");
    expect(job.output).toBe("hello");
  });

  test("a redirect is not followed and counts as a failure; exhaustion fails the callback, not the job", async () => {
    const jobId = await submit(TOKENS.acme, `${receiver.url}/moved`);
    const events = await settled("acme", jobId);
    const tries = attempts(events);
    expect(tries).toHaveLength(3); // the first attempt and the schedule's two retries
    for (const t of tries) {
      expect(t).toMatchObject({ data: { status_code: 302, error_class: "redirect" } });
    }
    expect(events.at(-1)).toMatchObject({ type: "callback.failed", data: { reason: "exhausted" } });
    expect(elsewhere.on("/target")).toHaveLength(0);
    expect((await hub.job(TOKENS.acme, jobId)).status).toBe("done");
  });

  test("Retry-After is honoured: the next attempt is not before it", async () => {
    const jobId = await submit(TOKENS.acme, `${receiver.url}/busy`);
    const events = await settled("acme", jobId);
    const [first, second] = attempts(events);
    expect(statusOf(first)).toBe(503);
    const at = (e: JobEvent | undefined) => Date.parse(e?.occurred_at ?? "");
    expect(at(second) - at(first)).toBeGreaterThanOrEqual(950);
    expect(events.at(-1)?.type).toBe("callback.delivered");
  });

  test("redeliver re-sends a settled callback with the same webhook-id", async () => {
    const jobId = await submit(TOKENS.acme, `${receiver.url}/again`);
    await settled("acme", jobId);
    const deps = {
      js: hub.running.hub.js,
      jsm: hub.running.hub.jsm,
      clock: systemClock,
      ids: randomIds,
    };
    const result = await requestRedelivery({ ...deps, layout: SINGLE_PARTITION_LAYOUT }, jobId, {
      requestedBy: "test",
    });
    expect(result).toMatchObject({ kind: "requested", clientId: "acme" });
    const got = await waitFor("the second delivery", () => {
      const list = receiver.on("/again").filter((r) => r.body.includes(jobId));
      return list.length === 2 ? list : undefined;
    });
    expect(got[1]?.headers["webhook-id"]).toBe(got[0]?.headers["webhook-id"]);
    expect(verified(got[1] as Received, SECRET_A)).toMatchObject({ data: { job_id: jobId } });
    const events = await waitFor("the redelivery to be recorded", async () => {
      const list = await hub.cbEvents("acme", jobId);
      return list.at(-1)?.type === "callback.delivered" && list.length === 3 ? list : undefined;
    });
    expect(events.map((e) => e.type)).toEqual([
      "callback.delivered",
      "callback.redelivery_requested",
      "callback.delivered",
    ]);
    expect(events[2]).toMatchObject({
      data: { attempts: 2, status_code: 204, redelivery_seq: expect.any(Number) },
    });
    const view = await waitFor("the view to count both attempts", async () => {
      const v = await hub.job(TOKENS.acme, jobId);
      const cb = v.callback as { status?: string; attempts?: number } | undefined;
      return cb?.status === "delivered" && cb.attempts === 2 ? v : undefined;
    });
    expect(view.status).toBe("done");
  });

  test("redeliver refuses unknown jobs and jobs without a callback", async () => {
    const deps = {
      js: hub.running.hub.js,
      jsm: hub.running.hub.jsm,
      clock: systemClock,
      ids: randomIds,
    };
    expect(
      await requestRedelivery(
        { ...deps, layout: SINGLE_PARTITION_LAYOUT },
        "job_AAAAAAAAAAAAAAAAAAAAAA",
      ),
    ).toMatchObject({
      kind: "refused",
      reason: "unknown_job",
    });
    const res = await hub.run(TOKENS.acme, { request_id: rid(), route: "demo.echo", input: "x" });
    const { job_id } = (await res.json()) as { job_id: string };
    await hub.finish("acme", job_id);
    expect(
      await requestRedelivery({ ...deps, layout: SINGLE_PARTITION_LAYOUT }, job_id),
    ).toMatchObject({ reason: "no_callback" });
  });
});

describe("SSRF guard", () => {
  test.each([
    ["http://10.1.2.3/cb", "rfc1918"],
    ["http://169.254.169.254/latest/meta-data", "cloud_metadata"],
    ["http://[::1]:8080/cb", "loopback"],
    ["http://100.64.0.1/cb", "cgnat"],
    ["http://[fd00::1]/cb", "unique_local"],
    ["http://localhost:9/cb", "loopback"],
  ])("submit refuses %s (%s) with a 400 naming the rule", async (url, rule) => {
    const res = await hub.run(TOKENS.acme, {
      request_id: rid(),
      route: "demo.echo",
      input: "x",
      callback_url: url,
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; detail: string; errors: unknown[] };
    expect(body.code).toBe("callback_url_refused");
    expect(body.detail).toContain(`(${rule})`);
    expect(body.errors).toEqual([{ pointer: "/callback_url", message: body.detail }]);
  });

  test("the same refused callback_url is refused again (the ingress remembers the verdict)", async () => {
    for (let i = 0; i < 2; i++) {
      const res = await hub.run(TOKENS.acme, {
        request_id: rid(),
        route: "demo.echo",
        input: "x",
        callback_url: "http://10.9.8.7/again",
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { detail: string }).detail).toContain("(rfc1918)");
    }
  });

  test("a client without a signing secret cannot ask for a callback (400)", async () => {
    const res = await hub.run(TOKENS.nosecret, {
      request_id: rid(),
      route: "demo.echo",
      input: "x",
      callback_url: `${receiver.url}/unsigned`,
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; detail: string };
    expect(body.code).toBe("callback_url_refused");
    expect(body.detail).toContain("no_signing_secret");
  });

  test("a name resolving to a non-allowlisted loopback address is refused at delivery", async () => {
    const jobId = await submit(TOKENS.acme, `http://rebind.test:${receiver.port}/rebind`);
    const events = await settled("acme", jobId);
    expect(events.map((e) => e.type)).toEqual(["callback.failed"]);
    expect(events[0]).toMatchObject({ data: { error_class: "ssrf_blocked", reason: "refused" } });
    expect(receiver.on("/rebind")).toHaveLength(0);
    expect((await hub.job(TOKENS.acme, jobId)).status).toBe("done");
  });

  test("a name resolving to an allowlisted address is delivered there", async () => {
    const jobId = await submit(TOKENS.acme, `http://allowed.test:${receiver.port}/allowed`);
    const events = await settled("acme", jobId);
    expect(events.at(-1)?.type).toBe("callback.delivered");
    const [request] = receiver.on("/allowed");
    expect(request?.headers.host).toBe(`allowed.test:${receiver.port}`);
    expect(verified(request as Received, SECRET_A)).toMatchObject({ data: { job_id: jobId } });
  });

  test("no callback body, secret or token appears in the logs", () => {
    const logs = hub.logs();
    expect(logs).toContain("callback attempt");
    for (const secret of [SECRET_A, SECRET_B, SOLO_SECRET]) expect(logs).not.toContain(secret);
    expect(logs).not.toContain("job.completed");
    expect(logs).not.toContain(TOKENS.acme);
  });
});
