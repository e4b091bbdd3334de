import { describe, expect, test } from "bun:test";
import { DEFAULT_CLIENTS, startHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = DEFAULT_CLIENTS[0] as (typeof DEFAULT_CLIENTS)[0];

describe("/metrics", () => {
  test("counts accepted, replayed and refused runs, and reports consumer stats", async () => {
    await using hub = await startHub();
    const body = { request_id: "m-1", route: "demo.echo", input: "x" };
    expect((await hub.run(body, ACME.token)).status).toBe(202);
    expect((await hub.run(body, ACME.token)).status).toBe(200);
    expect((await hub.run({ ...body, extra: 1 }, ACME.token)).status).toBe(400);
    expect((await hub.run(body, "wrong")).status).toBe(401);
    const res = await fetch(`${hub.running.monitoring.url}/metrics`);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(text).toContain('switchyard_runs_total{outcome="accepted",code=""} 1');
    expect(text).toContain('switchyard_runs_total{outcome="replayed",code=""} 1');
    expect(text).toContain('switchyard_runs_total{outcome="refused",code="invalid_request"} 1');
    expect(text).toContain('switchyard_runs_total{outcome="refused",code="unauthorized"} 1');
    expect(text).toContain("switchyard_process_resident_memory_bytes");
    // Consumer stats are polled; the projector's durable shows up once polled. The index folds
    // the projector's deliveries here (one process runs both): it has no durable of its own.
    const stats = await waitFor(
      "consumer stats",
      async () => {
        const t = await (await fetch(`${hub.running.monitoring.url}/metrics`)).text();
        return t.includes(
          'switchyard_consumer_pending{stream="SWITCHYARD_EVENTS",consumer="projector"}',
        ) && !t.includes('consumer="index"')
          ? t
          : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(stats).toMatch(/switchyard_projector_lag_events \d+/);
    // The search index's lag (issue 16).
    expect(stats).toMatch(/switchyard_index_lag_events \d+/);
  });

  test("is not served on the API port", async () => {
    await using hub = await startHub({ services: ["ingress"] });
    const res = await hub.request("/metrics");
    expect(res.status).toBe(404);
    expect(await res.text()).not.toContain("switchyard_");
    expect((await fetch(`${hub.running.monitoring.url}/metrics`)).status).toBe(200);
  });
});
