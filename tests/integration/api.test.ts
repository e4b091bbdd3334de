import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import { DEFAULT_CLIENTS, startHub, type TestHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";

const [ACME, GLOBEX] = DEFAULT_CLIENTS as [
  (typeof DEFAULT_CLIENTS)[0],
  (typeof DEFAULT_CLIENTS)[0],
];
let hub: TestHub;
let seq = 0;
const rid = () => `req-${Date.now()}-${seq++}`;

beforeAll(async () => {
  hub = await startHub({
    clients: [
      ...DEFAULT_CLIENTS,
      { id: "slow", token: "slow-token-0123456789abcdef", runsPerMinute: 2 },
    ],
  });
});
afterAll(() => hub.stop());

async function problem(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  const body = (await res.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ status, code });
  expect(typeof body.type).toBe("string");
  expect(typeof body.title).toBe("string");
  expect(typeof body.detail).toBe("string");
  return body;
}

async function runEvents(clientId: string, jobId: string): Promise<number> {
  const jsm = await jetstreamManager(hub.nats.nc);
  const info = await jsm.streams.info(TOPOLOGY.eventsStream, {
    subjects_filter: `sy.evt.${clientId}.${jobId}.run`,
  });
  return info.state.subjects?.[`sy.evt.${clientId}.${jobId}.run`] ?? 0;
}

describe("POST /run authentication", () => {
  test("no token → 401 with WWW-Authenticate: Bearer", async () => {
    const res = await hub.run({ request_id: rid(), route: "demo.echo", input: "x" }, "");
    expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
    await problem(res, 401, "unauthorized");
  });

  test("wrong token → 401", async () => {
    const res = await hub.run({ request_id: rid(), route: "demo.echo", input: "x" }, "nope");
    expect(res.headers.get("www-authenticate")).toStartWith("Bearer");
    await problem(res, 401, "unauthorized");
  });

  test("Basic auth → 401", async () => {
    const res = await hub.request("/run", {
      method: "POST",
      headers: { authorization: "Basic YTpi", "content-type": "application/json" },
      body: "{}",
    });
    await problem(res, 401, "unauthorized");
  });
});

describe("POST /run body", () => {
  test("another content type → 415", async () => {
    const res = await hub.request("/run", {
      method: "POST",
      token: ACME.token,
      headers: { "content-type": "text/plain" },
      body: "hello",
    });
    await problem(res, 415, "unsupported_media_type");
  });

  test("malformed JSON → 400", async () => {
    const res = await hub.request("/run", {
      method: "POST",
      token: ACME.token,
      headers: { "content-type": "application/json" },
      body: '{"request_id": ',
    });
    await problem(res, 400, "malformed_json");
  });

  test("a body above the limit → 413", async () => {
    const res = await hub.run(
      {
        request_id: rid(),
        route: "demo.echo",
        input: "x".repeat((hub.running.ingress?.maxBodyBytes ?? 0) + 10),
      },
      ACME.token,
    );
    await problem(res, 413, "payload_too_large");
  });

  test("an unknown field is refused and named", async () => {
    const res = await hub.run(
      { request_id: rid(), route: "demo.echo", input: "x", extra: 1 },
      ACME.token,
    );
    const body = await problem(res, 400, "invalid_request");
    expect(body.errors).toEqual([{ pointer: "/extra", message: "unknown field 'extra'" }]);
  });

  test("'callback' is refused with a pointer to callback_url; 'source' like any unknown field", async () => {
    const cb = await problem(
      await hub.run(
        { request_id: rid(), route: "demo.echo", input: "x", callback: "https://a.example" },
        ACME.token,
      ),
      400,
      "invalid_request",
    );
    expect(JSON.stringify(cb.errors)).toContain("callback_url");
    const src = await problem(
      await hub.run(
        { request_id: rid(), route: "demo.echo", input: "x", source: "crm" },
        ACME.token,
      ),
      400,
      "invalid_request",
    );
    expect(src.errors).toEqual([{ pointer: "/source", message: "unknown field 'source'" }]);
  });

  test("missing and mistyped fields each get a JSON pointer", async () => {
    const body = await problem(
      await hub.run({ route: 5, input: "x", metadata: { principal: { id: 1 } } }, ACME.token),
      400,
      "invalid_request",
    );
    const pointers = (body.errors as { pointer: string }[]).map((e) => e.pointer).sort();
    expect(pointers).toEqual([
      "/metadata/principal/id",
      "/metadata/principal/tenant",
      "/request_id",
      "/route",
    ]);
  });

  test("a relative callback_url is refused", async () => {
    const body = await problem(
      await hub.run(
        { request_id: rid(), route: "demo.echo", input: "x", callback_url: "/cb" },
        ACME.token,
      ),
      400,
      "invalid_request",
    );
    expect(body.errors).toEqual([
      { pointer: "/callback_url", message: "must be an absolute http or https URL" },
    ]);
  });

  test("input above the route's limit → 400 naming /input", async () => {
    const body = await problem(
      await hub.run({ request_id: rid(), route: "demo.small", input: "x".repeat(17) }, ACME.token),
      400,
      "invalid_request",
    );
    expect(body.errors).toEqual([{ pointer: "/input", message: "must be at most 16 bytes" }]);
  });
});

describe("POST /run routes and limits", () => {
  test("an unknown route and a route not allowed for the client answer the same 403", async () => {
    const unknown = await hub.run(
      { request_id: rid(), route: "nope.route", input: "x" },
      ACME.token,
    );
    const denied = await hub.run(
      { request_id: rid(), route: "billing.secret", input: "x" },
      ACME.token,
    );
    const a = await problem(unknown, 403, "route_not_allowed");
    const b = await problem(denied, 403, "route_not_allowed");
    expect({ ...a, instance: undefined }).toEqual({ ...b, instance: undefined });
  });

  test("the rate limit answers 429 with Retry-After", async () => {
    const token = "slow-token-0123456789abcdef";
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 3; i++) {
      last = await hub.run({ request_id: rid(), route: "demo.echo", input: "x" }, token);
      statuses.push(last.status);
    }
    expect(statuses).toEqual([202, 202, 429]);
    expect(Number(last?.headers.get("retry-after"))).toBeGreaterThan(0);
    await problem(last as Response, 429, "rate_limited");
  });
});

describe("POST /run and GET /jobs", () => {
  test("a new run answers 202 with the job, Location, and reaches done", async () => {
    const request_id = rid();
    const res = await hub.run({ request_id, route: "demo.echo", input: "hello" }, ACME.token);
    expect(res.status).toBe(202);
    const job = (await res.json()) as Record<string, string>;
    expect(job).toMatchObject({ status: "queued", request_id, route: "demo.echo" });
    expect(job.job_id).toMatch(/^job_[A-Za-z0-9_-]{22}$/);
    expect(Number.isNaN(Date.parse(job.created_at ?? ""))).toBe(false);
    expect(res.headers.get("location")).toBe(`/jobs/${job.job_id}`);
    const done = await waitFor("job done", async () => {
      const r = await hub.request(`/jobs/${job.job_id}`, { token: ACME.token });
      const body = (await r.json()) as Record<string, unknown>;
      return body.status === "done" ? body : undefined;
    });
    expect(done).toMatchObject({ job_id: job.job_id, request_id, output: "hello", status: "done" });
    expect(done).not.toHaveProperty("client_id");
    expect(done).not.toHaveProperty("seq");
  });

  test("the same request_id and body again → 200, the same job_id, the current status", async () => {
    const body = {
      request_id: rid(),
      route: "demo.echo",
      input: "again",
      metadata: { a: 1, b: [1, 2] },
    };
    const first = (await (await hub.run(body, ACME.token)).json()) as { job_id: string };
    await waitFor("done", async () => {
      const r = await hub.request(`/jobs/${first.job_id}`, { token: ACME.token });
      return ((await r.json()) as { status: string }).status === "done";
    });
    // Same body with keys in another order is the same request.
    const again = await hub.run(
      {
        metadata: { b: [1, 2], a: 1 },
        input: "again",
        route: "demo.echo",
        request_id: body.request_id,
      },
      ACME.token,
    );
    expect(again.status).toBe(200);
    const replay = (await again.json()) as { job_id: string; status: string };
    expect(replay.job_id).toBe(first.job_id);
    expect(replay.status).toBe("done");
    expect(await runEvents("acme", first.job_id)).toBe(1);
  });

  test("the same request_id with a different body → 409 and no new job", async () => {
    const request_id = rid();
    const first = (await (
      await hub.run({ request_id, route: "demo.echo", input: "a" }, ACME.token)
    ).json()) as {
      job_id: string;
    };
    await problem(
      await hub.run({ request_id, route: "demo.echo", input: "b" }, ACME.token),
      409,
      "request_id_conflict",
    );
    expect(await runEvents("acme", first.job_id)).toBe(1);
  });

  test("another client's identical request_id is an independent job", async () => {
    const body = { request_id: rid(), route: "demo.echo", input: "same" };
    const a = (await (await hub.run(body, ACME.token)).json()) as { job_id: string };
    const resB = await hub.run(body, GLOBEX.token);
    expect(resB.status).toBe(202);
    const b = (await resB.json()) as { job_id: string };
    expect(b.job_id).not.toBe(a.job_id);
  });

  test("50 concurrent identical POSTs make one job and one run.requested event", async () => {
    const body = { request_id: rid(), route: "demo.echo", input: "race" };
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => hub.run(body, ACME.token)),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 202)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(49);
    const ids = new Set(
      await Promise.all(
        responses.map(async (r) => ((await r.json()) as { job_id: string }).job_id),
      ),
    );
    expect(ids.size).toBe(1);
    expect(await runEvents("acme", [...ids][0] as string)).toBe(1);
  });

  test("GET: unknown ids and other clients' jobs answer the same 404", async () => {
    const mine = (await (
      await hub.run({ request_id: rid(), route: "demo.echo", input: "x" }, ACME.token)
    ).json()) as {
      job_id: string;
    };
    const theirs = await hub.request(`/jobs/${mine.job_id}`, { token: GLOBEX.token });
    const unknown = await hub.request("/jobs/job_AAAAAAAAAAAAAAAAAAAAAA", { token: GLOBEX.token });
    const garbage = await hub.request("/jobs/..%2F*>", { token: GLOBEX.token });
    const a = await problem(theirs, 404, "job_not_found");
    const b = await problem(unknown, 404, "job_not_found");
    await problem(garbage, 404, "job_not_found");
    expect({ ...a, instance: undefined }).toEqual({ ...b, instance: undefined });
  });

  test("GET without a token → 401", async () => {
    await problem(await hub.request("/jobs/job_AAAAAAAAAAAAAAAAAAAAAA"), 401, "unauthorized");
  });

  test("an unknown path → 404 problem", async () => {
    await problem(await hub.request("/nope"), 404, "not_found");
  });

  test("a too long URL → 414 problem", async () => {
    await problem(
      await hub.request(`/jobs/${"a".repeat(5000)}`, { token: ACME.token }),
      414,
      "uri_too_long",
    );
  });

  test("the run.requested event is readable by job and by client filter", async () => {
    const job = (await (
      await hub.run({ request_id: rid(), route: "demo.echo", input: "f" }, GLOBEX.token)
    ).json()) as {
      job_id: string;
    };
    await waitFor("done", async () => {
      const r = await hub.request(`/jobs/${job.job_id}`, { token: GLOBEX.token });
      return ((await r.json()) as { status: string }).status === "done";
    });
    const jsm = await jetstreamManager(hub.nats.nc);
    const byJob = await jsm.streams.info(TOPOLOGY.eventsStream, {
      subjects_filter: SINGLE_PARTITION_LAYOUT.filters.job({
        client_id: "globex",
        job_id: job.job_id,
      }),
    });
    expect(Object.keys(byJob.state.subjects ?? {}).sort()).toEqual([
      `sy.evt.globex.${job.job_id}.job`,
      `sy.evt.globex.${job.job_id}.run`,
    ]);
    const byClient = await jsm.streams.info(TOPOLOGY.eventsStream, {
      subjects_filter: SINGLE_PARTITION_LAYOUT.filters.client(0, "globex"),
    });
    expect(
      Object.keys(byClient.state.subjects ?? {}).every((s) => s.startsWith("sy.evt.globex.")),
    ).toBe(true);
  });
});

describe("operations", () => {
  test("/healthz and /readyz", async () => {
    expect((await hub.request("/healthz")).status).toBe(200);
    const ready = await hub.request("/readyz");
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: "ready" });
  });

  test("/openapi.json is the committed schemas/client-api-v1.openapi.json", async () => {
    const served = await (await hub.request("/openapi.json")).json();
    const file = await Bun.file(
      new URL("../../schemas/client-api-v1.openapi.json", import.meta.url),
    ).json();
    expect(served).toEqual(file);
  });

  test("logs carry job_id, client_id and request_id, never tokens or input", async () => {
    const secretInput = `very-secret-input-${rid()}`;
    const request_id = rid();
    await hub.run({ request_id, route: "demo.echo", input: secretInput }, ACME.token);
    await waitFor("log line", () => hub.logs().includes(request_id));
    const logs = hub.logs();
    expect(logs).not.toContain(secretInput);
    expect(logs).not.toContain(ACME.token);
    expect(logs).not.toContain(GLOBEX.token);
    const line = logs.split("\n").find((l) => l.includes(request_id) && l.includes("run accepted"));
    expect(JSON.parse(line ?? "{}")).toMatchObject({ client_id: "acme", request_id });
  });
});
