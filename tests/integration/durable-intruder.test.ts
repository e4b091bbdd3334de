/**
 * The projector's and the indexer's durables are owned by one process at a time (a lease), with
 * one ack-all per round. A leader paused past its lease can still pull from the durable once when
 * it wakes (the new leader recreated it under the same name): the messages it takes are then
 * un-acked elsewhere, and the owner's next ack-all would settle them unwritten, leaving views and
 * index rows behind for good (seen in tests/faults/projector-fencing.test.ts about 1 run in 10).
 * Here an intruder pulls from each durable without acking, as the stale leader does: the owner
 * sees the gap in the consumer sequence, takes the durable again from its floor, and every view
 * and every index row still reaches its final state. The index runs apart here (on its own
 * durable); in a process that runs both read models it folds the projector's deliveries, and a
 * gap there makes the projector take its durable again with the index fed anew (the third case).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { startHub, type TestHub, testIndexYaml } from "../helpers/hub.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { viewsMatchFold } from "../helpers/views-audit.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = "acme-token-0123456789abcdef";
const WAVE = 20;

let nats: TestNats;
/** The APIs, the projector, the executor and the callback service. */
let hub: TestHub;
/** The indexer alone, on its own durable, writing the index `hub` reads. */
let indexHub: TestHub;
/** Every service in one process: the index on the projector's deliveries. */
let together: TestHub;

beforeAll(async () => {
  nats = await startNats();
  const index = testIndexYaml();
  hub = await startHub({
    nats,
    yaml: index,
    services: ["ingress", "projector", "executor", "callback"],
  });
  indexHub = await startHub({ nats, yaml: index, services: ["indexer"] });
  together = await startHub({});
});
afterAll(async () => {
  await together?.stop();
  await indexHub?.stop();
  await hub?.stop();
  await nats?.stop();
});

async function submit(hub: TestHub, prefix: string): Promise<string[]> {
  const answers = await Promise.all(
    Array.from({ length: WAVE }, (_, i) =>
      hub.run({ request_id: `${prefix}-${i}`, route: "demo.echo", input: `in ${i}` }, ACME),
    ),
  );
  return Promise.all(
    answers.map(async (res) => {
      expect(res.status).toBe(202);
      return ((await res.json()) as { job_id: string }).job_id;
    }),
  );
}

/**
 * Pulls from a durable and never acknowledges, as a stale leader's last pull does, while waves of
 * jobs arrive, until it has taken something (its request waits among the owner's; which request
 * the server serves first is not fixed, so a wave may pass it by). A pull cut short because the
 * owner recreated the durable took nothing and is tried again.
 */
async function intrude(hub: TestHub, durable: string, prefix: string) {
  const consumers = jetstream(hub.nats.nc).consumers;
  const jobIds: string[] = [];
  let taken = 0;
  for (let wave = 0; wave < 30 && taken === 0; wave++) {
    const consumer = await consumers.get(TOPOLOGY.eventsStream, durable);
    const batch = await consumer.fetch({ max_messages: 5, expires: 1_000 });
    jobIds.push(...(await submit(hub, `${prefix}-${wave}`)));
    try {
      for await (const _ of batch) taken++;
    } catch {
      // the durable was recreated under the pull
    }
  }
  // The owner sees the gap at its next delivery. When the intruder took the last messages of its
  // wave, that is the redelivery after the durable's ack wait (longer than this test waits), so
  // one more wave comes after the intrusion, as a running hub's next jobs would.
  if (taken > 0) jobIds.push(...(await submit(hub, `${prefix}-after`)));
  return { jobIds, taken };
}

for (const [durable, owner, where] of [
  [TOPOLOGY.consumers.projector, "projector", "apart"],
  ["index", "index", "apart"],
  [TOPOLOGY.consumers.projector, "projector", "together"],
] as const) {
  test(`messages another process took from the ${owner}'s durable are folded all the same (read models ${where})`, async () => {
    const api = where === "together" ? together : hub;
    const ownerHub = where === "together" ? together : owner === "index" ? indexHub : hub;
    if (where === "together") {
      await waitFor("the index on the shared feed", () =>
        together.logs().includes("indexer folds the shared feed of its partition"),
      );
    }
    const { jobIds, taken } = await intrude(api, durable, `intruder-${owner}-${where}`);
    expect(taken).toBeGreaterThan(0);
    await waitFor(
      `the ${owner} to take its durable again`,
      () => ownerHub.logs().includes(`another process took deliveries of the ${owner}`),
      { timeoutMs: 15_000 },
    );
    await waitFor(
      "every job done in its view",
      async () => {
        for (const id of jobIds) {
          const res = await api.request(`/jobs/${id}`, { token: ACME });
          if (((await res.json()) as { status: string }).status !== "done") return false;
        }
        return true;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    await waitFor(
      "every job done in the index",
      async () => {
        const res = await api.request("/jobs?limit=500&status=done", { token: ACME });
        const listed = new Set(
          ((await res.json()) as { jobs: { job_id: string }[] }).jobs.map((j) => j.job_id),
        );
        return jobIds.every((id) => listed.has(id));
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    // Not only done: every view is the fold of all its job's events (run.requested included).
    const audit = await viewsMatchFold({
      jsm: await jetstreamManager(api.nats.nc),
      natsUrl: api.nats.url,
    });
    if (where === "together") {
      // The index was fed anew by the projector's durable taken again.
      const fed =
        together.logs().split("indexer folds the shared feed of its partition").length - 1;
      expect(fed).toBeGreaterThanOrEqual(2);
    }
    expect(audit.stdout).toContain(" 0 divergences");
    expect(audit.exitCode).toBe(0);
  }, 90_000);
}
