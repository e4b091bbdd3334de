/**
 * GET /jobs and POST /jobs/{job_id}/cancel against a real hub (issue 16, section 1): the calling
 * client's jobs only, from the search index, newest first, keyset pages; cancel ends a job at
 * once as error `cancelled`, a builtin stops, a repeat answers 200, a finished job 409, another
 * client's job 404.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readStream } from "../../shared/bus/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = "acme-token-0123456789abcdef";
const GLOBEX = "globex-token-0123456789abcdef";

const ROUTES = `
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.long
    executor: { kind: builtin, name: sleep, sleep_ms: 30000 }
  - key: demo.slow
    executor: { kind: nats }
`;

let hub: TestHub;

beforeAll(async () => {
  hub = await startHub({ yaml: ROUTES });
});
afterAll(async () => hub?.stop());

interface Job {
  job_id: string;
  status: string;
  route: string;
  created_at: string;
  error?: { code: string; message: string; cancelled_by?: { kind: string; id: string } };
}
interface PageBody {
  jobs: Job[];
  next_cursor: string | null;
}

async function run(token: string, requestId: string, route = "demo.echo"): Promise<Job> {
  const res = await hub.run({ request_id: requestId, route, input: `in ${requestId}` }, token);
  expect(res.status).toBe(202);
  return (await res.json()) as Job;
}

async function list(token: string, query = ""): Promise<{ res: Response; body: PageBody }> {
  const res = await hub.request(`/jobs${query}`, { token });
  return { res, body: (await res.json()) as PageBody };
}

async function listed(token: string, jobIds: string[]): Promise<void> {
  await waitFor("the jobs to be in the index", async () => {
    const { body } = await list(token, "?limit=500");
    const ids = new Set(body.jobs.map((j) => j.job_id));
    return jobIds.every((id) => ids.has(id));
  });
}

describe("GET /jobs", () => {
  const acmeJobs: Job[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 12; i++) acmeJobs.push(await run(ACME, `list-${i}`));
    await run(GLOBEX, "list-globex");
    await listed(
      ACME,
      acmeJobs.map((j) => j.job_id),
    );
  });

  test("the calling client's jobs only, newest first, with the same record as GET", async () => {
    const { res, body } = await list(ACME, "?limit=500");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("application/json");
    expect(Number(res.headers.get("switchyard-index-lag"))).toBeGreaterThanOrEqual(0);
    const ids = body.jobs.map((j) => j.job_id);
    expect(ids.length).toBe(new Set(ids).size);
    for (const job of acmeJobs) expect(ids).toContain(job.job_id);
    const times = body.jobs.map((j) => j.created_at);
    expect([...times].sort().reverse()).toEqual(times);
    const one = body.jobs.find((j) => j.job_id === acmeJobs[0]?.job_id);
    const got = (await (
      await hub.request(`/jobs/${acmeJobs[0]?.job_id}`, { token: ACME })
    ).json()) as Job;
    expect(one).toEqual(got);
    const globex = await list(GLOBEX, "?limit=500");
    expect(globex.body.jobs.map((j) => j.job_id)).not.toContain(acmeJobs[0]?.job_id);
  });

  test("pages by cursor without gaps or repeats while new jobs arrive", async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const { body }: { body: PageBody } = await list(
        ACME,
        `?limit=5&route=demo.echo${cursor ? `&cursor=${cursor}` : ""}`,
      );
      seen.push(...body.jobs.map((j) => j.job_id));
      cursor = body.next_cursor;
      if (pages++ === 0) await run(ACME, "list-while-paging"); // newer: lands before the cursor
    } while (cursor !== null);
    expect(new Set(seen).size).toBe(seen.length);
    for (const job of acmeJobs) expect(seen).toContain(job.job_id);
  });

  test("filters: status and route repeat, a time window, and nothing of another route", async () => {
    const from = acmeJobs[3]?.created_at ?? "";
    const { body } = await list(
      ACME,
      `?status=done&status=error&route=demo.echo&created_after=${encodeURIComponent(from)}&limit=500`,
    );
    expect(body.jobs.length).toBeGreaterThan(0);
    for (const job of body.jobs) {
      expect(["done", "error"]).toContain(job.status);
      expect(job.created_at >= from).toBe(true);
    }
    const none = await list(ACME, "?route=demo.slow&status=rejected");
    expect(none.body).toEqual({ jobs: [], next_cursor: null });
  });

  test.each([
    ["?limit=0", "limit"],
    ["?limit=501", "limit"],
    ["?limit=abc", "limit"],
    ["?status=cancelled", "status"],
    ["?status=", "status"],
    ["?route=Not A Route", "route"],
    ["?created_after=yesterday", "created_after"],
    ["?created_before=2026-01-01T00:00:00", "created_before"],
    ["?cursor=bogus", "cursor"],
    ["?limit=1&limit=2", "limit"],
    ["?colour=blue", "colour"],
  ])("%s answers 400 naming %s", async (query, param) => {
    const res = await hub.request(`/jobs${query}`, { token: ACME });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toContain("application/problem+json");
    const problem = (await res.json()) as {
      code: string;
      detail: string;
      errors: { pointer: string }[];
    };
    expect(problem.code).toBe("invalid_request");
    expect(problem.errors[0]?.pointer).toBe(`/query/${param}`);
    expect(problem.detail).toContain(param);
  });

  test("no token: 401 before anything else", async () => {
    const res = await hub.request("/jobs?colour=blue", { token: null });
    expect(res.status).toBe(401);
  });
});

describe("POST /jobs/{job_id}/cancel", () => {
  test("a dispatched job: 202 with the job ended as error cancelled by the client; then 200", async () => {
    const job = await run(ACME, "cancel-nats", "demo.slow");
    await waitFor("the job to be dispatched", async () => {
      const got = (await (await hub.request(`/jobs/${job.job_id}`, { token: ACME })).json()) as Job;
      return got.status === "dispatched";
    });
    // No body and no Content-Type, as the SDK sends it.
    const first = await hub.request(`/jobs/${job.job_id}/cancel`, { method: "POST", token: ACME });
    expect(first.status).toBe(202);
    const cancelled = (await first.json()) as Job;
    expect(cancelled.status).toBe("error");
    expect(cancelled.error).toEqual({
      code: "cancelled",
      message: "cancelled by client acme",
      cancelled_by: { kind: "client", id: "acme" },
    });
    const again = await hub.request(`/jobs/${job.job_id}/cancel`, { method: "POST", token: ACME });
    expect(again.status).toBe(200);
    expect(((await again.json()) as Job).error?.code).toBe("cancelled");
    // GET serves the projector's view: final within milliseconds of the cancel (docs/api.md).
    const got = await waitFor("the view to show the cancel", async () => {
      const seen = (await (
        await hub.request(`/jobs/${job.job_id}`, { token: ACME })
      ).json()) as Job;
      return seen.status === "error" ? seen : undefined;
    });
    expect(got.error?.cancelled_by).toEqual({ kind: "client", id: "acme" });
  });

  test("a running builtin stops: no result is written after the cancel", async () => {
    const job = await run(ACME, "cancel-builtin", "demo.long");
    await waitFor("the builtin to run", async () => {
      const got = (await (await hub.request(`/jobs/${job.job_id}`, { token: ACME })).json()) as Job;
      return got.status === "running";
    });
    const res = await hub.request(`/jobs/${job.job_id}/cancel`, { method: "POST", token: ACME });
    expect(res.status).toBe(202);
    // The executor released the job at once (it would otherwise hold it for 30 s).
    await waitFor("the builtin to stop", async () => {
      const info = await hub.running.hub.jsm.consumers.info("SWITCHYARD_EVENTS", "executor");
      return info.num_ack_pending === 0;
    });
    const types: string[] = [];
    for await (const record of readStream(hub.running.hub.js, {
      filterSubject: `sy.evt.acme.${job.job_id}.*`,
    })) {
      types.push(JSON.parse(new TextDecoder().decode(record.data)).type);
    }
    expect(types).toEqual(["run.requested", "job.running", "job.error"]);
  });

  test("a finished job: 409 job_final; another client's or an unknown job: 404", async () => {
    const done = await run(ACME, "cancel-done");
    await waitFor("the job to finish", async () => {
      const got = (await (
        await hub.request(`/jobs/${done.job_id}`, { token: ACME })
      ).json()) as Job;
      return got.status === "done";
    });
    const final = await hub.request(`/jobs/${done.job_id}/cancel`, { method: "POST", token: ACME });
    expect(final.status).toBe(409);
    expect(((await final.json()) as { code: string }).code).toBe("job_final");
    const other = await hub.request(`/jobs/${done.job_id}/cancel`, {
      method: "POST",
      token: GLOBEX,
    });
    expect(other.status).toBe(404);
    expect(((await other.json()) as { code: string }).code).toBe("job_not_found");
    const unknown = await hub.request("/jobs/job_AAAAAAAAAAAAAAAAAAAAAA/cancel", {
      method: "POST",
      token: ACME,
    });
    expect(unknown.status).toBe(404);
    const malformed = await hub.request("/jobs/nope/cancel", { method: "POST", token: ACME });
    expect(malformed.status).toBe(404);
    const withBody = await hub.request(`/jobs/${done.job_id}/cancel`, {
      method: "POST",
      token: ACME,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ reason: "x" }),
    });
    expect(withBody.status).toBe(400);
  });
});
