import type { Job, JobStatus } from "../../sdk/index.ts";

const ALLOWED = new Set(["request_id", "route", "input", "metadata", "callback_url"]);

export interface Seen {
  method: string;
  path: string;
  body: string;
}

function problem(status: number, code: string, title: string, extra: object = {}, headers = {}) {
  return Response.json(
    { type: `https://switchyard.dev/problems/${code}`, title, status, code, ...extra },
    { status, headers: { "content-type": "application/problem+json", ...headers } },
  );
}

/**
 * An in-memory imitation of Client API v1 on 127.0.0.1. Behaviour hooks by request_id / route:
 * - request_id "slow-*": the first attempt is accepted but its answer is held until a retry arrives;
 * - request_id "busy-*": the first attempt answers 503 with Retry-After: 1;
 * - route "stuck": the job never leaves "running";
 * - route "throttled-poll": the first GET of the job answers 429 with Retry-After: 3.
 * Each GET of a job advances it one step along queued → running → done.
 */
export function startFakeApi(token: string) {
  const seen: Seen[] = [];
  const runs = new Map<string, { canonical: string; jobId: string }>();
  const jobs = new Map<
    string,
    { job: Job; script: JobStatus[]; gets: number; served: JobStatus[] }
  >();
  const held = new Map<string, () => void>();
  let counter = 0;

  async function handleRun(req: Request): Promise<Response> {
    const text = await req.text();
    seen.push({ method: "POST", path: "/run", body: text });
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(text);
    } catch {
      return problem(400, "invalid_json", "Body is not JSON");
    }
    const unknown = Object.keys(body).filter((k) => !ALLOWED.has(k));
    if (unknown.length > 0) {
      return problem(400, "validation_failed", "Invalid run request", {
        detail: "unknown top-level field",
        errors: unknown.map((k) => ({ pointer: `/${k}`, message: "Unexpected property" })),
      });
    }
    const requestId = String(body.request_id);
    const attempts = seen.filter((s) => s.body.includes(`"request_id":"${requestId}"`)).length;
    if (requestId.startsWith("busy-") && attempts === 1) {
      return problem(503, "unavailable", "Try again", {}, { "retry-after": "1" });
    }
    const canonical = JSON.stringify(body);
    const existing = runs.get(requestId);
    if (existing) {
      held.get(requestId)?.();
      if (existing.canonical !== canonical) {
        return problem(409, "idempotency_conflict", "request_id reused with a different body");
      }
      const entry = jobs.get(existing.jobId);
      return Response.json(entry?.job);
    }
    counter += 1;
    const jobId = `job_${counter}`;
    const now = new Date().toISOString();
    const job: Job = {
      job_id: jobId,
      request_id: requestId,
      route: String(body.route),
      status: "queued",
      created_at: now,
      updated_at: now,
    };
    const script: JobStatus[] =
      body.route === "stuck" ? ["queued", "running"] : ["queued", "running", "done"];
    jobs.set(jobId, { job, script, gets: 0, served: [] });
    runs.set(requestId, { canonical, jobId });
    const accepted = Response.json(
      { job_id: jobId, status: "queued", request_id: requestId, route: job.route, created_at: now },
      { status: 202, headers: { location: `/jobs/${jobId}` } },
    );
    if (requestId.startsWith("slow-")) {
      // Accepted and stored, but the answer arrives only after the client has given up.
      return new Promise((resolve) => held.set(requestId, () => resolve(accepted)));
    }
    return accepted;
  }

  function handleGet(jobId: string): Response {
    seen.push({ method: "GET", path: `/jobs/${jobId}`, body: "" });
    const entry = jobs.get(jobId);
    if (!entry) return problem(404, "job_not_found", "Job not found");
    entry.gets += 1;
    if (entry.job.route === "throttled-poll" && entry.gets === 1) {
      return problem(429, "rate_limited", "Slow down", {}, { "retry-after": "3" });
    }
    const answer = { ...entry.job };
    entry.served.push(answer.status);
    const next = entry.script[entry.script.indexOf(entry.job.status) + 1];
    if (next) entry.job = { ...entry.job, status: next, updated_at: new Date().toISOString() };
    if (answer.status === "done") answer.output = { answer: 42 };
    return Response.json(answer);
  }

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      if (req.headers.get("authorization") !== `Bearer ${token}`) {
        return problem(401, "unauthorized", "Missing or invalid token");
      }
      const { pathname } = new URL(req.url);
      if (req.method === "POST" && pathname === "/v1/run") return handleRun(req);
      const match = /^\/v1\/jobs\/([^/]+)$/.exec(pathname);
      if (req.method === "GET" && match?.[1]) return handleGet(decodeURIComponent(match[1]));
      return problem(404, "not_found", "No such endpoint");
    },
  });

  return {
    baseUrl: `http://127.0.0.1:${server.port}/v1`,
    seen,
    /** Statuses answered to GETs of a job, in order. */
    statusesServed: (jobId: string) => jobs.get(jobId)?.served ?? [],
    stop: async () => {
      for (const release of held.values()) release();
      await server.stop(true);
    },
  };
}

/** A clock whose sleeps return at once and advance virtual time; sleeps are recorded. */
export function fakeClock(start = 1_750_000_000_000) {
  let t = start;
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => t,
    sleep: async (ms: number, signal?: AbortSignal) => {
      signal?.throwIfAborted();
      sleeps.push(ms);
      t += ms;
    },
  };
}
