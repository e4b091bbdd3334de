/**
 * Messages in the events stream that are not valid events (bytes no hub writer makes) are poison:
 * every consumer that reads one terminates it once, logs it, and goes on with the next. Nothing
 * is retried, no position stalls behind it, and the jobs around it complete as usual. The index,
 * fed from the projector's durable in a process that runs both, skips it (the projector
 * terminates it).
 */
import { expect, test } from "bun:test";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { INDEX_CONSUMER } from "../../services/indexer/index.ts";
import { EVENT_TYPE_HEADER, TOPOLOGY } from "../../shared/bus/index.ts";
import { readCreatedMs } from "../../shared/jobs/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { startHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";

const TOKEN = "poison-token-0123456789abcdef";
const encoder = new TextEncoder();

/** What is stored on purpose, one per subject kind, each with the type header a writer sets. */
const POISON = [
  // Not JSON: the executor, the projector and the indexer read it.
  { subject: "sy.evt.acme.job_PoisonRun0000000000000000.run", type: "run.requested", body: "{x" },
  {
    // JSON of a final type that breaks its schema: the callback service reads it too.
    subject: "sy.evt.acme.job_PoisonJob0000000000000000.job",
    type: "job.error",
    body: JSON.stringify({
      id: "evt_poison",
      type: "job.error",
      schema_version: 1,
      job_id: "job_PoisonJob0000000000000000",
      client_id: "acme",
      occurred_at: "2026-11-26T00:00:00.000Z",
      data: { code: "x".repeat(100), message: "too long a code" },
    }),
  },
  // An object that is no event at all.
  {
    subject: "sy.evt.acme.job_PoisonCb00000000000000000.cb",
    type: "callback.delivered",
    body: "{}",
  },
] as const;

/** Messages logged with this text, by the poison handlers of every consumer. */
function logged(logs: string, text: string): number {
  return logs.split("\n").filter((line) => line.includes(`"msg":"${text}"`)).length;
}

test("poison in the events stream: each consumer terminates it once and the next job completes", async () => {
  const receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response(null, { status: 204 }),
  });
  try {
    await using hub = await startHub({
      clients: [
        {
          id: "acme",
          token: TOKEN,
          routes: ["demo.*"],
          callbackSecrets: [generateWebhookSecret()],
        },
      ],
      yaml: 'callbacks: { allow_cidrs: ["127.0.0.1/32"] }',
    });
    const { js, jsm } = hub.running.hub;
    // One process runs both read models: the index folds the projector's deliveries.
    await waitFor("the index on the shared feed", () =>
      hub.logs().includes("indexer folds the shared feed of its partition"),
    );
    for (const poison of POISON) {
      const headers = natsHeaders();
      headers.set(EVENT_TYPE_HEADER, poison.type);
      await js.publish(poison.subject, encoder.encode(poison.body), { headers });
    }

    const res = await hub.run(
      {
        request_id: "after-poison",
        route: "demo.echo",
        input: "still works",
        callback_url: `http://127.0.0.1:${receiver.port}/cb`,
      },
      TOKEN,
    );
    expect(res.status).toBe(202);
    const { job_id } = (await res.json()) as { job_id: string };
    const view = await waitFor("the job done with its callback delivered", async () => {
      const got = await hub.request(`/jobs/${job_id}`, { token: TOKEN });
      const body = (await got.json()) as {
        status?: string;
        created_at?: string;
        callback?: { status: string };
      };
      return body.callback?.status === "delivered" && body;
    });
    expect(view.status).toBe("done");

    // Every durable is past the poison: nothing pending, nothing waiting for an ack, no retries.
    const durables = [
      TOPOLOGY.consumers.executor,
      TOPOLOGY.consumers.projector,
      TOPOLOGY.consumers.callback,
    ];
    for (const durable of durables) {
      const info = await waitFor(`${durable} settled`, async () => {
        const got = await jsm.consumers.info(TOPOLOGY.eventsStream, durable);
        return got.num_pending === 0 && got.num_ack_pending === 0 && got;
      });
      expect({ durable, redelivered: info.num_redelivered }).toEqual({ durable, redelivered: 0 });
    }
    // The index's own durable is gone while it is fed: only one delivery per event for both.
    const names: string[] = [];
    for await (const c of jsm.consumers.list(TOPOLOGY.eventsStream)) names.push(c.name);
    expect(names).not.toContain(INDEX_CONSUMER);
    // Terminated once each: the executor its run, the projector all three, the callback service
    // the final event; the index skipped all three.
    const logs = hub.logs();
    expect(logged(logs, "poison run.requested terminated")).toBe(1);
    expect(logged(logs, "poison event terminated")).toBe(3 + 1);
    await waitFor(
      "the index past the poison",
      () => logged(hub.logs(), "poison event skipped") === 3,
    );
    // A job's creation time (what keys its index row) read from its run.requested: none for the
    // poison one, as for a job that does not exist, so the indexer keys no row for it.
    const events = { jsm, layout: hub.running.hub.layout };
    expect(
      await readCreatedMs(events, { client_id: "acme", job_id: "job_PoisonRun0000000000000000" }),
    ).toBeUndefined();
    expect(
      await readCreatedMs(events, { client_id: "acme", job_id: "job_Absent000000000000000000" }),
    ).toBeUndefined();
    const created = await readCreatedMs(events, { client_id: "acme", job_id });
    expect(created).toBe(Date.parse(view.created_at ?? ""));
  } finally {
    receiver.stop(true);
  }
});
