import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { FAULT_CLIENT, faultYaml, hubProcs, startAllServices } from "../faults/procs.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

// One receiver that hangs must not hold back callbacks to a healthy one: callbacks wait in a lane
// per destination (services/callback/lanes.ts), so the healthy receiver's never queue behind the
// hung one's. Shown while the hung receiver holds every attempt its lane allows and more of its
// callbacks wait behind them: every healthy callback arrives, and the hung lane has not moved.
// The latency figure (healthy p99 beside a hung receiver) is a benchmark: bench/fairness.ts.

const LANE = 8;
const HUNG_JOBS = 40;
const HEALTHY_JOBS = 200;

/** Accepts every callback and never answers; counts what arrived and what the sender gave up. */
function hungReceiver() {
  let arrived = 0;
  let ended = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch(req) {
      arrived += 1;
      req.signal.addEventListener("abort", () => {
        ended += 1;
      });
      return new Promise<Response>(() => {});
    },
  });
  return {
    url: `http://127.0.0.1:${server.port}/cb`,
    arrived: () => arrived,
    ended: () => ended,
    stop: () => server.stop(true),
  };
}

/** Answers 204 at once; counts callbacks per job (webhook-id is msg_<job_id>). */
function healthyReceiver() {
  const arrived = new Map<string, number>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const jobId = (req.headers.get("webhook-id") ?? "").slice(4);
      arrived.set(jobId, (arrived.get(jobId) ?? 0) + 1);
      return new Response(null, { status: 204 });
    },
  });
  return { url: `http://127.0.0.1:${server.port}/cb`, arrived, stop: () => server.stop(true) };
}

async function submit(base: string, request_id: string, callback_url: string): Promise<string> {
  const res = await fetch(`${base}/run`, {
    method: "POST",
    headers: { authorization: `Bearer ${FAULT_CLIENT.token}`, "content-type": "application/json" },
    body: JSON.stringify({ request_id, route: "f.echo", input: "x", callback_url }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { job_id: string }).job_id;
}

test("a hung receiver holding its whole lane, with more callbacks waiting behind: every callback to a healthy receiver still arrives, once", async () => {
  await using nats = await startNats();
  // Attempts to the hung receiver outlive the test: none ends, so its lane stays full.
  const yaml = faultYaml({
    natsUrl: nats.url,
    logLevel: "warn",
    callbacks: { timeout: "5m", per_destination_concurrency: LANE },
  });
  await using procs = await hubProcs(yaml, nats.url);
  await startAllServices(procs);
  const healthy = healthyReceiver();
  const hung = hungReceiver();
  try {
    const base = procs.url();
    for (let i = 0; i < HUNG_JOBS; i++) await submit(base, `hung-${i}`, hung.url);
    await waitFor("the hung receiver to hold its whole lane", () => hung.arrived() === LANE);
    const healthyJobs = await Promise.all(
      Array.from({ length: HEALTHY_JOBS }, (_, i) => submit(base, `healthy-${i}`, healthy.url)),
    );
    await waitFor(
      "every callback to the healthy receiver",
      () => healthyJobs.every((id) => healthy.arrived.has(id)),
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    // The hung lane has not moved meanwhile: the same attempts held, none given up, and the other
    // 32 callbacks still waiting behind them. The healthy ones went past, each once.
    expect(hung.arrived()).toBe(LANE);
    expect(hung.ended()).toBe(0);
    expect(healthyJobs.filter((id) => healthy.arrived.get(id) !== 1)).toEqual([]);
    // The callback consumer keeps delivering: nothing of the stream waits behind the hung lane.
    const jsm = await jetstreamManager(nats.nc);
    const consumer = await jsm.consumers.info(TOPOLOGY.eventsStream, TOPOLOGY.consumers.callback);
    expect(consumer.num_pending).toBe(0);
  } finally {
    healthy.stop();
    hung.stop();
  }
}, 120_000);
