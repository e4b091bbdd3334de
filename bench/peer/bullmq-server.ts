/**
 * The peer: what a Node user would build instead of Switchyard, written plainly. Fastify with a
 * strict JSON schema for the body (unknown fields refused, as the hub does), bearer auth against a
 * SHA-256 of the token, an idempotent BullMQ job id derived from client + request_id, and
 * GET /jobs/:id from the queue. The echo worker and its signed callback are in worker.ts.
 *
 * Env: PORT, PEER_TOKEN, REDIS_URL, PEER_PREFIX. Prints "LISTENING <port>".
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { Queue } from "bullmq";
import Fastify from "fastify";
import { PREFIX, QUEUE, redisConnection } from "./common.ts";

const CLIENT = "bench";
const tokenHash = createHash("sha256")
  .update(process.env.PEER_TOKEN ?? "")
  .digest();

interface RunBody {
  request_id: string;
  route: string;
  input: string;
  metadata?: Record<string, unknown>;
  callback_url?: string;
}

interface JobData extends RunBody {
  client: string;
}

const queue = new Queue<JobData>(QUEUE, { connection: redisConnection(), prefix: PREFIX });

// removeAdditional: false makes additionalProperties: false refuse unknown fields (Fastify's
// default configuration would strip them silently).
const app = Fastify({ logger: false, ajv: { customOptions: { removeAdditional: false } } });

const runSchema = {
  type: "object",
  additionalProperties: false,
  required: ["request_id", "route", "input"],
  properties: {
    request_id: { type: "string", minLength: 1, maxLength: 255 },
    route: { type: "string", minLength: 1, maxLength: 128 },
    input: { type: "string", maxLength: 65536 },
    metadata: {
      type: "object",
      properties: {
        principal: {
          type: "object",
          required: ["id", "tenant"],
          properties: {
            id: { type: "string", minLength: 1 },
            tenant: { type: "string", minLength: 1 },
          },
        },
      },
    },
    callback_url: { type: "string", maxLength: 2048, pattern: "^https?://" },
  },
} as const;

app.addHook("onRequest", async (request, reply) => {
  if (request.url === "/healthz") return;
  const header = request.headers.authorization ?? "";
  const token = header.startsWith("Bearer ") ? header.slice(7) : "";
  const presented = createHash("sha256").update(token).digest();
  if (!timingSafeEqual(presented, tokenHash)) {
    return reply.code(401).send({ error: "unauthorized" });
  }
});

app.get("/healthz", async () => ({ status: "ok" }));

app.post<{ Body: RunBody }>("/run", { schema: { body: runSchema } }, async (request, reply) => {
  const body = request.body;
  const jobId = createHash("sha256")
    .update(`${CLIENT}\n${body.request_id}`)
    .digest("base64url")
    .slice(0, 22);
  // A job with the same id is not added twice: BullMQ returns the existing one.
  await queue.add("run", { ...body, client: CLIENT }, { jobId, removeOnComplete: false });
  reply.code(202).header("location", `/jobs/${jobId}`);
  return { job_id: jobId, request_id: body.request_id, route: body.route, status: "queued" };
});

const STATUS: Record<string, string> = {
  completed: "done",
  failed: "error",
  active: "running",
  waiting: "queued",
  "waiting-children": "queued",
  prioritized: "queued",
  delayed: "queued",
};

app.get<{ Params: { id: string } }>("/jobs/:id", async (request, reply) => {
  const job = await queue.getJob(request.params.id);
  if (!job || job.data.client !== CLIENT) return reply.code(404).send({ error: "not_found" });
  const state = await job.getState();
  return {
    job_id: job.id,
    request_id: job.data.request_id,
    route: job.data.route,
    status: STATUS[state] ?? state,
    created_at: new Date(job.timestamp).toISOString(),
    ...(job.finishedOn ? { completed_at: new Date(job.finishedOn).toISOString() } : {}),
    ...(state === "completed" ? { output: job.returnvalue } : {}),
  };
});

const address = await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 0) });
process.stdout.write(`LISTENING ${new URL(address).port}\n`);
const stop = async () => {
  await app.close();
  await queue.close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
