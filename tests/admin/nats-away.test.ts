import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { waitFor } from "../helpers/wait.ts";
import {
  CLIENT_TOKENS,
  OPERATOR_TOKENS,
  type OperatorHub,
  startOperatorHub,
} from "./operator-hub.ts";

// The operator API while NATS is away (given a hub with a dispatched job; when its nats-server is
// killed; then each endpoint). Reads the search index can serve keep answering; what needs the
// event stream answers 503 `unavailable` with Retry-After at once. It used to answer 500 after
// nats.js's 5 s request timeout.

const alice = OPERATOR_TOKENS.alice;
const JSON_BODY = { method: "POST", body: "{}", headers: { "content-type": "application/json" } };
let op: OperatorHub;
let jobId = "";
/** The job as the operator API showed it before NATS went away: status, timeline and links. */
let before: JobDetail;

interface JobDetail {
  job: { status: string };
  timeline: { seq: number; type: string }[];
  links: Record<string, string>;
}

beforeAll(async () => {
  op = await startOperatorHub();
  const res = await op.hub.run(
    { request_id: "away-1", route: "demo.slow", input: "held by no worker" },
    CLIENT_TOKENS.acme,
  );
  jobId = ((await res.json()) as { job_id: string }).job_id;
  await waitFor("the job in the index", async () => {
    const page = await op.admin(`/jobs?request_id=away-1`, alice);
    return ((await page.json()) as { jobs: unknown[] }).jobs.length === 1;
  });
  const overview = (await (await op.admin("/overview", alice)).json()) as {
    event_store: string;
    consumers: unknown[];
  };
  expect(overview.event_store).toBe("reachable");
  expect(overview.consumers.length).toBeGreaterThan(0);
  before = (await (await op.admin(`/jobs/${jobId}`, alice)).json()) as JobDetail;
  expect(before.job.status).toBe("dispatched");
  await op.hub.nats.kill("SIGKILL");
  await waitFor("the hub to see NATS gone", () => !op.hub.running.hub.connected());
});

afterAll(async () => {
  await op.stop();
});

const expectUnavailable = async (res: Response) => {
  expect(res.status).toBe(503);
  expect(res.headers.get("content-type")).toContain("application/problem+json");
  expect(res.headers.get("retry-after")).toBe("2");
  expect(((await res.json()) as { code: string }).code).toBe("unavailable");
};

describe("the operator API with NATS away", () => {
  test("a job's timeline needs the stream: 503 unavailable", async () => {
    await expectUnavailable(await op.admin(`/jobs/${jobId}`, alice));
  });

  for (const action of ["cancel", "retry"]) {
    test(`${action} needs the stream: 503 unavailable`, async () => {
      await expectUnavailable(await op.admin(`/jobs/${jobId}/${action}`, alice, JSON_BODY));
    });
  }

  test("a callback redelivery, one or in bulk, needs the stream: 503; a dry run still counts", async () => {
    await expectUnavailable(await op.admin(`/callbacks/${jobId}/redeliver`, alice, JSON_BODY));
    const dry = await op.admin("/callbacks/redeliver", alice, {
      ...JSON_BODY,
      body: JSON.stringify({ dry_run: true }),
    });
    expect(dry.status).toBe(200);
    expect(await dry.json()).toEqual({ dry_run: true, matched: 0 });
    await expectUnavailable(await op.admin("/callbacks/redeliver", alice, JSON_BODY));
  });

  test("search, counts and failed callbacks are served from the index", async () => {
    const page = await op.admin(`/jobs?request_id=away-1`, alice);
    expect(page.status).toBe(200);
    expect(((await page.json()) as { jobs: { status: string }[] }).jobs[0]?.status).toBe(
      "dispatched",
    );
    expect((await op.admin("/counts", alice)).status).toBe(200);
    expect((await op.admin("/callbacks/failed", alice)).status).toBe(200);
  });

  test("the overview answers what the index knows and says the event store is unreachable", async () => {
    const res = await op.admin("/overview", alice);
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      event_store: string;
      consumers: unknown[];
      lag: { projector_events: number | null };
      jobs_24h: Record<string, number>;
    };
    expect(body.event_store).toBe("unreachable");
    expect(body.consumers).toEqual([]);
    expect(body.lag.projector_events).toBeNull();
    expect(body.jobs_24h.dispatched).toBe(1);
  });

  test("none of it was logged as an unhandled error", () => {
    expect(op.hub.logs()).not.toContain("unhandled error");
  });
});

describe("the operator API after NATS is back", () => {
  test("the refused cancel and retry changed nothing; the overview sees the event store again, and a cancel goes through", async () => {
    await op.hub.nats.restart();
    await waitFor("the hub to reconnect", () => op.hub.running.hub.connected(), {
      timeoutMs: 20_000,
    });
    const overview = await waitFor(
      "the overview to reach the event store",
      async () => {
        const body = (await (await op.admin("/overview", alice)).json()) as { event_store: string };
        return body.event_store === "reachable" ? body : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(overview.event_store).toBe("reachable");
    const after = (await (await op.admin(`/jobs/${jobId}`, alice)).json()) as JobDetail;
    expect(after.job.status).toBe("dispatched");
    expect(after.timeline).toEqual(before.timeline);
    expect(after.links).toEqual(before.links);
    const cancel = await waitFor(
      "a cancel to be stored",
      async () => {
        const res = await op.admin(`/jobs/${jobId}/cancel`, alice, JSON_BODY);
        return res.status === 503 ? undefined : res;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(cancel.status).toBe(202);
  });
});
