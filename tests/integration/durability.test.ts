import { describe, expect, test } from "bun:test";
import { jetstream } from "@nats-io/jetstream";
import { rebuildProjection } from "../../services/projector/rebuild.ts";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { appendEvent, jobViewKey, SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import { createLogger } from "../../shared/log/index.ts";
import { DEFAULT_CLIENTS, startHub } from "../helpers/hub.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = DEFAULT_CLIENTS[0] as (typeof DEFAULT_CLIENTS)[0];
const silent = createLogger({ level: "silent", service: "test" });

async function jobStatus(
  hub: Awaited<ReturnType<typeof startHub>>,
  jobId: string,
): Promise<string> {
  const res = await hub.request(`/jobs/${jobId}`, { token: ACME.token });
  return ((await res.json()) as { status: string }).status;
}

describe("idempotency beyond the duplicate window", () => {
  test("a retry after the window has passed returns the same job, still one event", async () => {
    await using hub = await startHub({ natsOptions: { duplicate_window: "1s" } });
    const body = { request_id: "late-retry", route: "demo.echo", input: "x" };
    const first = await hub.run(body, ACME.token);
    expect(first.status).toBe(202);
    const { job_id } = (await first.json()) as { job_id: string };
    // Wait out the 1 s window by watching the clock, then retry.
    const until = Date.now() + 1_500;
    await waitFor("the duplicate window to pass", () => Date.now() > until, { timeoutMs: 5_000 });
    const again = await hub.run(body, ACME.token);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { job_id: string }).job_id).toBe(job_id);
    const changed = await hub.run({ ...body, input: "y" }, ACME.token);
    expect(changed.status).toBe(409);
    const subject = `sy.evt.acme.${job_id}.run`;
    const info = await hub.running.hub.jsm.streams.info(TOPOLOGY.eventsStream, {
      subjects_filter: subject,
    });
    expect(info.state.subjects?.[subject]).toBe(1);
  });
});

describe("read-your-writes", () => {
  test("with the projector stopped, GET after 202 answers from the stream, never 404", async () => {
    await using hub = await startHub({ services: ["ingress", "executor"] });
    const res = await hub.run({ request_id: "ryw-1", route: "demo.echo", input: "x" }, ACME.token);
    expect(res.status).toBe(202);
    const { job_id } = (await res.json()) as { job_id: string };
    const get = await hub.request(`/jobs/${job_id}`, { token: ACME.token });
    expect(get.status).toBe(200);
    expect(["queued", "done"]).toContain(((await get.json()) as { status: string }).status);
    // The executor still runs: the fallback folds its outcome too.
    await waitFor(
      "done via the stream fallback",
      async () => (await jobStatus(hub, job_id)) === "done",
    );
    const replay = await hub.run(
      { request_id: "ryw-1", route: "demo.echo", input: "x" },
      ACME.token,
    );
    expect(replay.status).toBe(200);
    expect(((await replay.json()) as { status: string }).status).toBe("done");
  });
});

describe("start-up reads", () => {
  test("sy_meta is read from its stream leader: a follower's direct get could miss the store mark or a key", async () => {
    await using hub = await startHub();
    const info = await hub.running.hub.jsm.streams.info(`KV_${TOPOLOGY.metaBucket}`);
    expect(info.config.allow_direct).toBe(false);
    // The bucket still answers: the store mark and the job-id key were read through it at start.
    expect((await hub.running.hub.meta.get("store_version"))?.string()).toBe("2");
  });
});

describe("projector", () => {
  test("a late, illegal event is kept in the stream, ignored for status, and logged", async () => {
    await using hub = await startHub();
    const res = await hub.run({ request_id: "late-1", route: "demo.echo", input: "x" }, ACME.token);
    const { job_id } = (await res.json()) as { job_id: string };
    await waitFor("done", async () => (await jobStatus(hub, job_id)) === "done");
    // A misbehaving writer appends without the expected-sequence check.
    const ack = await appendEvent(
      { js: jetstream(hub.nats.nc), layout: SINGLE_PARTITION_LAYOUT },
      {
        id: "evt_late",
        type: "job.error",
        schema_version: 1,
        job_id,
        client_id: "acme",
        occurred_at: new Date().toISOString(),
        data: { code: "late", message: "too late" },
      },
    );
    expect(ack.kind).toBe("appended");
    await waitFor("the ignored event to be logged", () =>
      hub.logs().includes('"reason":"job_final"'),
    );
    expect(await jobStatus(hub, job_id)).toBe("done");
  });

  test("rebuild recreates identical views from the stream", async () => {
    await using nats = await startNats();
    await using hub = await startHub({ nats });
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await hub.run(
        { request_id: `rb-${i}`, route: "demo.echo", input: `n${i}` },
        ACME.token,
      );
      ids.push(((await res.json()) as { job_id: string }).job_id);
    }
    await waitFor("all done", async () => {
      for (const id of ids) if ((await jobStatus(hub, id)) !== "done") return false;
      return true;
    });
    // GET answers "done" from the stream before the projector has written a view (it folds the
    // stream for a job without one), so wait for the views themselves.
    const before = await waitFor("every view written as done", async () => {
      const views = await Promise.all(
        ids.map(async (id) =>
          (await hub.running.hub.jobs.get(jobViewKey({ client_id: "acme", job_id: id })))?.json<{
            status: string;
          }>(),
        ),
      );
      return views.every((v) => v?.status === "done") ? views : undefined;
    });
    await hub.stop();
    const { connectHub } = await import("../../shared/hub/index.ts");
    const conn = await connectHub(hub.config, silent, "rebuild-test");
    try {
      // Corrupt one view first: the rebuild must restore it.
      await conn.jobs.put(
        jobViewKey({ client_id: "acme", job_id: ids[0] as string }),
        JSON.stringify({ bogus: true }),
      );
      const result = await rebuildProjection({
        layout: SINGLE_PARTITION_LAYOUT,
        nc: conn.nc,
        js: conn.js,
        jsm: conn.jsm,
        logger: silent,
      });
      expect(result.jobs).toBe(20);
      const after = await Promise.all(
        ids.map(async (id) =>
          (await conn.jobs.get(jobViewKey({ client_id: "acme", job_id: id })))?.json(),
        ),
      );
      expect(after).toEqual(before);
    } finally {
      await conn.drain();
    }
  });
});

describe("NATS unavailable", () => {
  test("POST /run and GET answer 503 with Retry-After while NATS is down, 202 after it returns", async () => {
    await using nats = await startNats();
    await using hub = await startHub({ nats });
    const ok = await hub.run({ request_id: "before", route: "demo.echo", input: "x" }, ACME.token);
    const { job_id } = (await ok.json()) as { job_id: string };
    await nats.kill();
    const down = await waitFor("a 503 while NATS is down", async () => {
      const res = await hub.run(
        { request_id: "during", route: "demo.echo", input: "x" },
        ACME.token,
      );
      return res.status === 503 ? res : undefined;
    });
    expect(Number(down.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(down.headers.get("content-type")).toBe("application/problem+json");
    const get = await hub.request(`/jobs/${job_id}`, { token: ACME.token });
    expect(get.status).toBe(503);
    expect((await hub.request("/readyz")).status).toBe(503);
    await nats.restart();
    const after = await waitFor(
      "a 202 after NATS returns",
      async () => {
        const res = await hub.run(
          { request_id: "during", route: "demo.echo", input: "x" },
          ACME.token,
        );
        return res.status === 202 || res.status === 200 ? res : undefined;
      },
      { timeoutMs: 20_000 },
    );
    const job = (await after.json()) as { job_id: string };
    await waitFor(
      "the retried run to finish",
      async () => (await jobStatus(hub, job.job_id)) === "done",
      {
        timeoutMs: 20_000,
      },
    );
  });
});
