/**
 * The ceiling: a bare Elysia route that validates the same POST /run body (the hub's own
 * validator) and publishes one message with a Nats-Msg-Id to the same JetStream stream, awaiting
 * the ack. Nothing else: no auth, no rate limit, no idempotency read-back, no logging.
 *
 * The message is a valid run.requested event (on sy.evt.bench.<job_id>.run, route bench.sleep0)
 * so the hub's projector and executor do the same downstream work for it as for a real run: the
 * ceiling and the ingress are measured with the same background consumers running.
 *
 * The NATS connection has the hub's client settings (no async stack traces, writes coalesced per
 * event-loop turn), so the ratio measures the hub's work, not a handicapped client.
 *
 * Env: NATS_URL, PORT. Prints "LISTENING <port>".
 */
import { randomBytes } from "node:crypto";
import { jetstream } from "@nats-io/jetstream";
import { connect, headers as natsHeaders } from "@nats-io/transport-node";
import { Elysia } from "elysia";
import { validateRunRequest } from "../services/ingress/run-request.ts";
import { coalesceWrites } from "../shared/nats/index.ts";

const nc = await connect({
  servers: process.env.NATS_URL ?? "",
  name: "bench-ceiling",
  noAsyncTraces: true,
});
coalesceWrites(nc);
const js = jetstream(nc);
const prefix = randomBytes(6).toString("base64url"); // 8 characters
let counter = 0;
const FINGERPRINT = "0".repeat(64);
const encoder = new TextEncoder();

const app = new Elysia({ normalize: false }).post(
  "/run",
  async ({ request }) => {
    const body = validateRunRequest(await request.json());
    const jobId = `job_${prefix}${(counter++).toString(36).padStart(14, "0")}`;
    const event = {
      id: `evt_${jobId.slice(4)}`,
      type: "run.requested",
      schema_version: 1,
      job_id: jobId,
      client_id: "bench",
      occurred_at: new Date().toISOString(),
      data: {
        request_id: body.request_id,
        route: "bench.sleep0",
        input: body.input,
        fingerprint: FINGERPRINT,
      },
    };
    const h = natsHeaders();
    h.set("Sy-Event-Type", "run.requested");
    await js.publish(`sy.evt.bench.${jobId}.run`, encoder.encode(JSON.stringify(event)), {
      msgID: jobId,
      headers: h,
      expect: { lastSubjectSequence: 0 },
    });
    return new Response(JSON.stringify({ job_id: jobId, status: "queued" }), {
      status: 202,
      headers: { "content-type": "application/json" },
    });
  },
  { parse: "none" },
);
app.listen({ hostname: "127.0.0.1", port: Number(process.env.PORT ?? 0) });
process.stdout.write(`LISTENING ${app.server?.port}\n`);
const stop = async () => {
  await app.stop(true);
  await nc.drain();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
