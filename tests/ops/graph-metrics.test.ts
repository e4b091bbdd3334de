import { describe, expect, test } from "bun:test";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { taskConsumerName } from "../../shared/worker/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { startNats } from "../helpers/nats.ts";
import { sampleValue, scrapeHub } from "../helpers/prom.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "graphs-token-0123456789abcdef";
const CLIENT = {
  id: "grapher",
  token: TOKEN,
  routes: ["g.*"],
  callbackSecrets: [generateWebhookSecret()],
};
const ROUTES = `
callbacks: { allow_cidrs: ["127.0.0.1/32"], timeout: 2s }
routes:
  - key: g.echo
    executor: { kind: builtin, name: echo }
  - key: g.off
    enabled: false
    executor: { kind: builtin, name: echo }
  - key: g.worker
    executor: { kind: nats, ack_wait: 2s }
`;
const EVENTS_MAX_BYTES = 64 * 1024 * 1024;

async function submit(hub: TestHub, body: Record<string, unknown>): Promise<string> {
  const res = await hub.run(body, TOKEN);
  expect(res.status).toBe(202);
  return ((await res.json()) as { job_id: string }).job_id;
}

describe("metrics worth graphing", () => {
  test("completions by status and code, latency to done and to callback, backlogs on every stream, stream sizes", async () => {
    const receiver = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => new Response(null, { status: 204 }),
    });
    try {
      await using hub = await startHub({
        clients: [CLIENT],
        yaml: ROUTES,
        natsOptions: { events_max_bytes: EVENTS_MAX_BYTES },
      });
      const callback_url = `http://127.0.0.1:${receiver.port}/cb`;
      await submit(hub, { request_id: "g-1", route: "g.echo", input: "x", callback_url });
      await submit(hub, { request_id: "g-2", route: "g.off", input: "x" });
      await submit(hub, { request_id: "g-3", route: "g.worker", input: "nobody pulls" });
      const families = await waitFor("completions and the callback counted", async () => {
        const { families } = await scrapeHub(hub);
        const callbacks = sampleValue(families, "switchyard_callback_completion_seconds_count", {
          route: "g.echo",
          outcome: "delivered",
        });
        const rejected = sampleValue(families, "switchyard_jobs_completed_total", {
          route: "g.off",
          status: "rejected",
          code: "route_disabled",
        });
        // The projector counts g.echo once its view settles (after callback.delivered).
        const done = sampleValue(families, "switchyard_jobs_completed_total", {
          route: "g.echo",
          status: "done",
          code: "",
        });
        return callbacks === 1 && rejected === 1 && done === 1 && families;
      });
      expect(
        sampleValue(families, "switchyard_jobs_completed_total", {
          route: "g.echo",
          status: "done",
          code: "",
        }),
      ).toBe(1);
      expect(
        sampleValue(families, "switchyard_job_completion_seconds_count", { route: "g.echo" }),
      ).toBe(1);
      // The +Inf bucket holds every observation; the first bucket (5 ms) may or may not.
      expect(
        sampleValue(families, "switchyard_callback_completion_seconds_bucket", {
          route: "g.echo",
          le: "+Inf",
        }),
      ).toBe(1);
      for (const service of ["ingress", "projector", "executor", "callback"]) {
        expect(sampleValue(families, "switchyard_service_info", { service })).toBe(1);
      }

      // The scrape itself reads the consumers and streams (no timer fills these gauges).
      const { families: stats } = await scrapeHub(hub);
      const consumers = (stats.get("switchyard_consumer_pending")?.samples ?? []).map(
        (s) => `${s.labels.stream}/${s.labels.consumer}`,
      );
      expect(consumers).toEqual(
        expect.arrayContaining([
          "SWITCHYARD_EVENTS/executor",
          "SWITCHYARD_EVENTS/projector",
          "SWITCHYARD_EVENTS/callback",
          `SWITCHYARD_TASKS/${taskConsumerName("g.worker")}`,
          "SWITCHYARD_CALLBACKS/callback-queue",
        ]),
      );
      expect(consumers.some((c) => c.startsWith("SWITCHYARD_DEADLINES/deadline_"))).toBe(true);
      // The worker's task waits in its queue: one message nobody has taken.
      const taskBacklog =
        (sampleValue(stats, "switchyard_consumer_pending", {
          consumer: taskConsumerName("g.worker"),
        }) ?? 0) +
        (sampleValue(stats, "switchyard_consumer_ack_pending", {
          consumer: taskConsumerName("g.worker"),
        }) ?? 0);
      expect(taskBacklog).toBe(1);
      // Its deadline timer waits in the deadline consumer (parked or not yet delivered).
      const deadlines = ["switchyard_consumer_pending", "switchyard_consumer_ack_pending"]
        .flatMap((name) => stats.get(name)?.samples ?? [])
        .filter((s) => s.labels.stream === "SWITCHYARD_DEADLINES")
        .reduce((sum, s) => sum + s.value, 0);
      expect(deadlines).toBe(1);
      expect(
        sampleValue(stats, "switchyard_stream_messages", { stream: "SWITCHYARD_EVENTS" }),
      ).toBeGreaterThanOrEqual(7);
      expect(
        sampleValue(stats, "switchyard_stream_bytes", { stream: "SWITCHYARD_EVENTS" }),
      ).toBeGreaterThan(0);
      expect(
        sampleValue(stats, "switchyard_stream_limit_bytes", { stream: "SWITCHYARD_EVENTS" }),
      ).toBe(EVENTS_MAX_BYTES);
      expect(
        sampleValue(stats, "switchyard_stream_messages", { stream: "KV_sy_jobs" }),
      ).toBeGreaterThanOrEqual(2);
      // Streams without a limit export none.
      expect(sampleValue(stats, "switchyard_stream_limit_bytes", { stream: "KV_sy_jobs" })).toBe(
        undefined,
      );
    } finally {
      receiver.stop(true);
    }
  });

  test("projector lag in events and seconds while no projector runs", async () => {
    await using nats = await startNats();
    // A full hub creates the projector's durable, then stops.
    const first = await startHub({ nats, clients: [CLIENT], yaml: ROUTES });
    await first.stop();
    await using ingressOnly = await startHub({
      nats,
      clients: [CLIENT],
      yaml: ROUTES,
      services: ["ingress"],
    });
    await submit(ingressOnly, { request_id: "lag-1", route: "g.echo", input: "x" });
    await submit(ingressOnly, { request_id: "lag-2", route: "g.echo", input: "y" });
    await Bun.sleep(300);
    const { families } = await scrapeHub(ingressOnly);
    expect(sampleValue(families, "switchyard_projector_lag_events")).toBe(2);
    const seconds = sampleValue(families, "switchyard_projector_lag_seconds") ?? 0;
    expect(seconds).toBeGreaterThanOrEqual(0.3);
    expect(seconds).toBeLessThan(60);
    expect(sampleValue(families, "switchyard_service_info", { service: "ingress" })).toBe(1);
    expect(sampleValue(families, "switchyard_service_info", { service: "projector" })).toBe(
      undefined,
    );
  });
});
