import { afterAll, beforeAll, expect, test } from "bun:test";
import { STOP_GRACE_MS } from "../../services/executor/kinds/kind.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";
import { eventTypes } from "./helpers.ts";

/**
 * A graceful stop of an executor with builtin sleeps in flight: a sleep that ends within the stop's
 * grace finishes; a longer one is cut short at once and its run handed back (nak), so another
 * replica takes it without waiting out the ack wait.
 */

const CLIENT = { id: "ops", token: "ops-token-0123456789abcdef", routes: ["x.*"] };
const LONG_MS = STOP_GRACE_MS * 2;
const SHORT_MS = 2_000;
const ROUTES = `
routes:
  - key: x.long
    deadline: 5m
    executor: { kind: builtin, name: sleep, sleep_ms: ${LONG_MS} }
  - key: x.short
    executor: { kind: builtin, name: sleep, sleep_ms: ${SHORT_MS} }
`;

let nats: TestNats;
let front: TestHub;

beforeAll(async () => {
  nats = await startNats();
  front = await startHub({
    nats,
    clients: [CLIENT],
    yaml: ROUTES,
    services: ["ingress", "projector"],
  });
});
afterAll(async () => {
  await front.stop();
  await nats.stop();
});

const startExecutor = () =>
  startHub({ nats, clients: [CLIENT], yaml: ROUTES, services: ["executor"] });

const statusOf = async (jobId: string) => {
  const res = await front.request(`/jobs/${jobId}`, { token: CLIENT.token });
  return ((await res.json()) as { status: string }).status;
};

const submit = async (requestId: string, route: string) => {
  const res = await front.run({ request_id: requestId, route, input: "zz" }, CLIENT.token);
  expect(res.status).toBe(202);
  return ((await res.json()) as { job_id: string }).job_id;
};

/** Stops the executor and answers how long the stop took. */
const timedStop = async (executor: TestHub) => {
  const startedAt = Date.now();
  await executor.stop();
  return Date.now() - startedAt;
};

test("a sleep longer than the stop's grace is cut short at once and handed back: another replica takes the run at once", async () => {
  const first = await startExecutor();
  const jobId = await submit("long-sleep", "x.long");
  await waitFor("the first replica to start sleeping", async () => {
    return (await statusOf(jobId)) === "running";
  });

  // Waiting the sleep out would take LONG_MS, and a cut at the grace STOP_GRACE_MS.
  expect(await timedStop(first)).toBeLessThan(STOP_GRACE_MS / 3);
  expect(first.logs()).toContain("run handed back: the executor is stopping");
  expect(first.logs()).not.toContain("job handling failed");
  expect(await eventTypes(nats.nc, CLIENT.id, jobId)).toEqual(["job.running"]);

  const second = await startExecutor();
  try {
    // Handed back with a nak, the run comes again at once; left un-acked it would come only
    // after the executor's ack wait (10 s).
    await waitFor(
      "the second replica to take the run",
      async () => (await eventTypes(nats.nc, CLIENT.id, jobId)).length === 2,
      { timeoutMs: 5_000, intervalMs: 100 },
    );
    const cancel = await front.request(`/jobs/${jobId}/cancel`, {
      method: "POST",
      token: CLIENT.token,
    });
    expect(cancel.status).toBe(202);
    // The cancel ends the second replica's sleep, which then acks the run.
    await waitFor("the second replica to settle the run", async () => {
      const info = await second.running.hub.jsm.consumers.info("SWITCHYARD_EVENTS", "executor");
      return info.num_ack_pending === 0 && info.num_pending === 0;
    });
    expect(await eventTypes(nats.nc, CLIENT.id, jobId)).toEqual([
      "job.running",
      "job.running",
      "job.error",
    ]);
  } finally {
    await second.stop();
  }
  expect(second.logs()).not.toContain("run handed back");
}, 60_000);

test("a sleep that ends within the grace finishes before the stop returns, and the job is done", async () => {
  const executor = await startExecutor();
  const jobId = await submit("short-sleep", "x.short");
  await waitFor("the sleep to start", async () => (await statusOf(jobId)) === "running");

  await timedStop(executor);
  expect(await eventTypes(nats.nc, CLIENT.id, jobId)).toEqual(["job.running", "job.done"]);
  expect(executor.logs()).not.toContain("run handed back");
}, 30_000);
