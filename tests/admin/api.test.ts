/**
 * The operator API (issue 16, section 2) against a real hub: operator credentials and roles,
 * search across clients, a job's timeline, cancel, retry (linked both ways, one job per double
 * click), callback redelivery one by one and in bulk with a dry run, counts and the overview.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jetstream } from "@nats-io/jetstream";
import { readStream } from "../../shared/bus/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";
import { waitFor } from "../helpers/wait.ts";
import {
  CLIENT_TOKENS,
  OPERATOR_TOKENS,
  type OperatorHub,
  startOperatorHub,
} from "./operator-hub.ts";

const { alice, olga, victor } = OPERATOR_TOKENS;
let op: OperatorHub;
let receiver: ReturnType<typeof Bun.serve>;

interface AdminJob {
  job_id: string;
  client_id: string;
  status: string;
  route: string;
  output?: unknown;
  retry_of?: string;
  retried_as?: string;
  callback?: { status: string };
  error?: { code: string; cancelled_by?: { kind: string; id: string } };
}

beforeAll(async () => {
  // A callback receiver that is gone (410): callbacks fail on their first attempt.
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response(null, { status: 410 }),
  });
  op = await startOperatorHub({ maxBulk: 3 });
});
afterAll(async () => {
  await op?.stop();
  receiver?.stop(true);
});

async function run(
  client: keyof typeof CLIENT_TOKENS,
  requestId: string,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const res = await op.hub.run(
    { request_id: requestId, route: "demo.echo", input: `secret input ${requestId}`, ...extra },
    CLIENT_TOKENS[client],
  );
  expect(res.status).toBe(202);
  return ((await res.json()) as { job_id: string }).job_id;
}

async function search(query: string, token: string = alice): Promise<AdminJob[]> {
  const res = await op.admin(`/jobs${query}`, token);
  expect(res.status).toBe(200);
  return ((await res.json()) as { jobs: AdminJob[] }).jobs;
}

async function indexed(query: string, pred: (jobs: AdminJob[]) => boolean): Promise<AdminJob[]> {
  return waitFor(`the index to show ${query}`, async () => {
    const jobs = await search(query);
    return pred(jobs) ? jobs : undefined;
  });
}

const post = (path: string, token: string, body?: unknown) =>
  op.admin(path, token, {
    method: "POST",
    ...(body === undefined
      ? {}
      : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
  });

describe("credentials and roles", () => {
  test("client tokens, no token and unknown tokens cannot reach /admin", async () => {
    for (const token of [CLIENT_TOKENS.acme, null, "nope-0123456789abcdef"]) {
      const res = await op.admin("/jobs", token);
      expect(res.status).toBe(401);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
      expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    }
  });

  test("an operator token does not work on the Client API", async () => {
    const res = await op.hub.request("/jobs", { token: alice });
    expect(res.status).toBe(401);
  });

  test("the session says who and what", async () => {
    const res = await op.admin("/session", victor);
    expect(await res.json()).toEqual({
      operator: { id: "victor", role: "viewer", read_payloads: false },
      via: "bearer",
    });
  });

  test("viewers cannot act (403), whatever the job", async () => {
    const jobId = await run("acme", "viewer-tries");
    for (const path of [
      `/jobs/${jobId}/cancel`,
      `/jobs/${jobId}/retry`,
      `/callbacks/${jobId}/redeliver`,
    ]) {
      const res = await post(path, victor);
      expect(res.status).toBe(403);
      expect(((await res.json()) as { code: string }).code).toBe("forbidden");
    }
    expect((await post("/callbacks/redeliver", victor, { dry_run: true })).status).toBe(403);
  });
});

describe("unknown query parameters are refused by name, after authentication", () => {
  const job = "job_AAAAAAAAAAAAAAAAAAAAAA";
  test.each([
    ["GET", `/admin/v1/jobs/${job}`],
    ["GET", "/admin/v1/session"],
    ["GET", "/admin/v1/overview"],
    ["POST", `/admin/v1/jobs/${job}/cancel`],
    ["POST", `/admin/v1/jobs/${job}/retry`],
    ["POST", `/admin/v1/callbacks/${job}/redeliver`],
    ["POST", "/admin/v1/callbacks/redeliver"],
    ["GET", "/console/state"],
    ["POST", "/console/logout"],
  ])("%s %s?colour=red: 400 naming colour", async (method, path) => {
    const anonymous = await op.hub.request(`${path}?colour=red`, { method, token: null });
    // /console/state answers "nobody" and logout clears a cookie without a session; both
    // check the query all the same.
    expect(anonymous.status).toBe(path.startsWith("/console/") ? 400 : 401);
    const res = await op.hub.request(`${path}?colour=red`, { method, token: olga });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    const problem = (await res.json()) as { detail: string; errors: { pointer: string }[] };
    expect(problem.errors[0]?.pointer).toBe("/query/colour");
    expect(problem.detail).toContain("colour");
  });
});

describe("search and detail", () => {
  let acmeJob: string;
  let globexJob: string;

  beforeAll(async () => {
    acmeJob = await run("acme", "search-1", {
      metadata: { principal: { id: "u1", tenant: "tenant-x" } },
    });
    globexJob = await run("globex", "search-2");
    await indexed("?request_id=search-2", (j) => j.some((x) => x.status === "done"));
    await indexed("?request_id=search-1", (j) => j.some((x) => x.status === "done"));
  });

  test("across clients, and by client, status, route, tenant and request_id", async () => {
    const both = await search("?status=done&route=demo.echo&limit=500");
    expect(both.map((j) => j.job_id)).toEqual(expect.arrayContaining([acmeJob, globexJob]));
    expect((await search("?client=globex&limit=500")).every((j) => j.client_id === "globex")).toBe(
      true,
    );
    expect((await search("?tenant=tenant-x")).map((j) => j.job_id)).toEqual([acmeJob]);
    expect((await search("?request_id=search-1&client=acme")).map((j) => j.job_id)).toEqual([
      acmeJob,
    ]);
    expect(await search("?request_id=search-1&client=globex")).toEqual([]);
  });

  test("output only with read_payloads", async () => {
    const [withPayloads] = await search("?request_id=search-1", alice);
    expect(withPayloads?.output).toBe("secret input search-1");
    const [without] = await search("?request_id=search-1", victor);
    expect(without?.output).toEqual({ redacted: true });
  });

  test("a job's timeline: every event with sequence, time and type; input only with read_payloads", async () => {
    const res = await op.admin(`/jobs/${acmeJob}`, victor);
    expect(res.status).toBe(200);
    const detail = (await res.json()) as {
      job: AdminJob;
      timeline: { seq: number; time: string; type: string; data: Record<string, unknown> }[];
    };
    expect(detail.job.client_id).toBe("acme");
    expect(detail.timeline.map((e) => e.type)).toEqual(["run.requested", "job.done"]);
    expect(detail.timeline[0]?.seq).toBeGreaterThan(0);
    expect(Date.parse(detail.timeline[0]?.time ?? "")).toBeGreaterThan(0);
    expect(detail.timeline[0]?.data.input).toEqual({ redacted: true });
    expect(JSON.stringify(detail)).not.toContain("secret input");
    const full = (await (await op.admin(`/jobs/${acmeJob}`, alice)).json()) as typeof detail;
    expect(full.timeline[0]?.data.input).toBe("secret input search-1");
  });

  test.each([
    ["?colour=red", "colour"],
    ["?status=lost", "status"],
    ["?limit=501", "limit"],
    ["?client=a%20b", "client"],
    ["?created_after=soon", "created_after"],
    ["?cursor=zzz", "cursor"],
    [`?route=${"a".repeat(300)}`, "route"],
  ])("bad search %s: 400 naming %s", async (query, param) => {
    const res = await op.admin(`/jobs${query}`, alice);
    expect(res.status).toBe(400);
    const problem = (await res.json()) as { errors: { pointer: string }[] };
    expect(problem.errors[0]?.pointer).toBe(`/query/${param}`);
  });

  test("unknown job: 404", async () => {
    expect((await op.admin("/jobs/job_AAAAAAAAAAAAAAAAAAAAAA", alice)).status).toBe(404);
    expect((await op.admin("/jobs/nope", alice)).status).toBe(404);
  });
});

async function events(client: string, jobId: string): Promise<JobEvent[]> {
  const out: JobEvent[] = [];
  for await (const r of readStream(jetstream(op.hub.nats.nc), {
    filterSubject: `sy.evt.${client}.${jobId}.*`,
  })) {
    out.push(JSON.parse(new TextDecoder().decode(r.data)) as JobEvent);
  }
  return out;
}

describe("actions", () => {
  test("cancel names the operator; a repeat is 200; a finished job 409", async () => {
    const res = await op.hub.run(
      { request_id: "op-cancel", route: "demo.slow", input: "x" },
      CLIENT_TOKENS.acme,
    );
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    await waitFor(
      "the index to know the job",
      async () => (await search(`?request_id=op-cancel`)).length === 1,
    );
    const first = await post(`/jobs/${jobId}/cancel`, olga);
    expect(first.status).toBe(202);
    expect(((await first.json()) as { job: AdminJob }).job.error?.cancelled_by).toEqual({
      kind: "operator",
      id: "olga",
    });
    expect((await post(`/jobs/${jobId}/cancel`, alice)).status).toBe(200);
    const last = (await events("acme", jobId)).at(-1);
    expect(last).toMatchObject({
      type: "job.error",
      data: { code: "cancelled", cancelled_by: { kind: "operator", id: "olga" } },
    });
    const done = await run("acme", "op-cancel-done");
    await indexed(`?request_id=op-cancel-done`, (j) => j[0]?.status === "done");
    const final = await post(`/jobs/${done}/cancel`, olga);
    expect(final.status).toBe(409);
    expect(((await final.json()) as { code: string }).code).toBe("job_final");
  });

  test("retry: a new job linked both ways; a double click is one retry; done jobs are refused", async () => {
    const res = await op.hub.run(
      { request_id: "op-retry", route: "demo.off", input: "again" },
      CLIENT_TOKENS.globex,
    );
    const oldJob = ((await res.json()) as { job_id: string }).job_id;
    await indexed(`?request_id=op-retry`, (j) => j[0]?.status === "rejected");
    const [first, second] = await Promise.all([
      post(`/jobs/${oldJob}/retry`, olga),
      post(`/jobs/${oldJob}/retry`, alice),
    ]);
    const statuses = [first.status, second.status].sort();
    expect(statuses).toEqual([200, 202]);
    const a = (await first.json()) as { job: AdminJob; retry_of: string };
    const b = (await second.json()) as { job: AdminJob };
    expect(a.job.job_id).toBe(b.job.job_id);
    expect(a.retry_of).toBe(oldJob);
    const newJob = a.job.job_id;
    // The client sees the link on the new job; the old one shows where it went.
    const got = (await (
      await op.hub.request(`/jobs/${newJob}`, { token: CLIENT_TOKENS.globex })
    ).json()) as AdminJob;
    expect(got.retry_of).toBe(oldJob);
    const oldDetail = (await (await op.admin(`/jobs/${oldJob}`, alice)).json()) as {
      links: Record<string, string>;
    };
    expect(oldDetail.links).toEqual({ retried_as: newJob });
    const newDetail = (await (await op.admin(`/jobs/${newJob}`, alice)).json()) as {
      links: Record<string, string>;
      timeline: { type: string; data: Record<string, unknown> }[];
    };
    expect(newDetail.links).toEqual({ retry_of: oldJob });
    expect(newDetail.timeline[0]?.data).toMatchObject({
      retry_of: oldJob,
      requested_by: { kind: "operator" },
    });
    const retried = (await events("globex", oldJob)).filter((e) => e.type === "job.retried");
    expect(retried.length).toBeGreaterThanOrEqual(1);
    expect(retried[0]?.data).toMatchObject({
      retry_job_id: newJob,
      requested_by: { kind: "operator" },
    });
    await indexed(`?request_id=op-retry`, (j) => j[0]?.retried_as === newJob);
    const done = await run("acme", "op-retry-done");
    await indexed(`?request_id=op-retry-done`, (j) => j[0]?.status === "done");
    const refused = await post(`/jobs/${done}/retry`, olga);
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { code: string }).code).toBe("job_not_retryable");
  });

  test("failed callbacks: listed, redelivered one by one, and in bulk with a dry run and a cap", async () => {
    const url = `http://127.0.0.1:${receiver.port}/gone`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await run("acme", `cb-fail-${i}`, { callback_url: url }));
    const failed = await waitFor("five failed callbacks in the index", async () => {
      const res = await op.admin("/callbacks/failed?client=acme&limit=500", victor);
      const jobs = ((await res.json()) as { jobs: AdminJob[] }).jobs;
      return ids.every((id) => jobs.some((j) => j.job_id === id)) ? jobs : undefined;
    });
    expect(failed.every((j) => j.callback?.status === "failed")).toBe(true);
    const one = await post(`/callbacks/${ids[0]}/redeliver`, olga);
    expect(one.status).toBe(202);
    expect(await one.json()).toEqual({ job_id: ids[0], requested: true });
    const last = (await events("acme", ids[0] ?? "")).filter(
      (e) => e.type === "callback.redelivery_requested",
    );
    expect(last[0]?.data).toMatchObject({ requested_by: "operator:olga" });
    // Five failed, the cap is three: the filter must be narrowed.
    const tooMany = await post("/callbacks/redeliver", olga, {
      where: { client: "acme" },
      dry_run: true,
    });
    expect(tooMany.status).toBe(400);
    expect(((await tooMany.json()) as { code: string }).code).toBe("bulk_too_large");
    const where = { client: "acme", request_id: "cb-fail-3" };
    const dry = await post("/callbacks/redeliver", olga, { where, dry_run: true });
    expect(await dry.json()).toEqual({ dry_run: true, matched: 1 });
    const bulk = await post("/callbacks/redeliver", olga, { where });
    expect(bulk.status).toBe(202);
    expect(await bulk.json()).toEqual({ dry_run: false, matched: 1, requested: 1, refused: [] });
    for (const body of [
      { where: { colour: "red" } },
      { where: { status: ["done", 3] } },
      { wher: {} },
      { dry_run: "yes" },
    ]) {
      const res = await post("/callbacks/redeliver", olga, body);
      expect(res.status).toBe(400);
    }
  });

  test("counts by status and route over a window, and the overview", async () => {
    const res = await op.admin("/counts?client=acme", victor);
    expect(res.status).toBe(200);
    const counts = (await res.json()) as {
      total: number;
      by_status: Record<string, number>;
      by_route: Record<string, number>;
    };
    expect(counts.by_status.done).toBeGreaterThan(0);
    expect(counts.by_route["demo.echo"]).toBeGreaterThan(0);
    expect(counts.total).toBe(Object.values(counts.by_status).reduce((a, b) => a + b, 0));
    // The window bounds what is counted: every job of this file was created in the last hour.
    const windowed = async (fromMs: number, toMs: number) => {
      const after = new Date(fromMs).toISOString();
      const before = new Date(toMs).toISOString();
      const page = await op.admin(
        `/counts?client=acme&created_after=${after}&created_before=${before}`,
        victor,
      );
      expect(page.status).toBe(200);
      return (await page.json()) as typeof counts & { window: { from: string; to: string } };
    };
    const hour = 3_600_000;
    const earlier = await windowed(Date.now() - 3 * hour, Date.now() - 2 * hour);
    expect(earlier.total).toBe(0);
    expect(earlier.by_status).toEqual({});
    const lastHour = await windowed(Date.now() - hour, Date.now() + 60_000);
    expect(lastHour.total).toBe(counts.total);
    expect(lastHour.by_status).toEqual(counts.by_status);
    // Widened to whole minutes.
    const within = await windowed(
      Date.parse("2026-03-04T05:06:30Z"),
      Date.parse("2026-03-04T05:08:10Z"),
    );
    expect(within.window).toEqual({
      from: "2026-03-04T05:06:00.000Z",
      to: "2026-03-04T05:09:00.000Z",
    });
    const overview = (await (await op.admin("/overview", victor)).json()) as {
      per_minute: { accepted: number[] };
      jobs_24h: Record<string, number>;
      lag: { index_events: number };
      consumers: { name: string }[];
      callbacks_24h: { failed: number };
    };
    expect(overview.per_minute.accepted).toHaveLength(60);
    expect(overview.per_minute.accepted.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    // The index folds the projector's deliveries (one process runs both): no durable of its own.
    expect(overview.consumers.map((c) => c.name)).toEqual(
      expect.arrayContaining(["projector", "executor"]),
    );
    expect(overview.consumers.map((c) => c.name)).not.toContain("index");
    expect(overview.callbacks_24h.failed).toBeGreaterThan(0);
    expect(
      (
        await op.admin(
          "/counts?created_after=2026-01-02T00:00:00Z&created_before=2026-01-01T00:00:00Z",
          victor,
        )
      ).status,
    ).toBe(400);
  });
});
