/**
 * The HTTP side both peers share, so they differ only in where a run is stored: Fastify with a
 * strict JSON schema for the body (unknown fields refused, as the hub does), bearer auth against a
 * SHA-256 of the token (timingSafeEqual), a job id derived from client + request_id (the store
 * inserts it at most once), and GET /jobs/:id.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import Fastify, { type FastifyInstance } from "fastify";

export const CLIENT = "bench";

export interface RunBody {
  request_id: string;
  route: string;
  input: string;
  metadata?: Record<string, unknown>;
  callback_url?: string;
}

export interface PeerJobView {
  readonly job_id: string;
  readonly request_id: string;
  readonly route: string;
  readonly status: string;
  readonly created_at: string;
  readonly completed_at?: string;
  readonly output?: string;
}

/** Where a peer keeps its runs: BullMQ on Redis, or a table and graphile-worker on PostgreSQL. */
export interface PeerStore {
  /** Stores the run and queues its job unless a run with this id exists (then does nothing). */
  add(jobId: string, run: RunBody & { client: string }): Promise<void>;
  get(jobId: string, client: string): Promise<PeerJobView | undefined>;
}

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

/** The job id of a run: a hash of client and request_id, so a replay names the same job. */
export function peerJobId(client: string, requestId: string): string {
  return createHash("sha256").update(`${client}\n${requestId}`).digest("base64url").slice(0, 22);
}

export function createPeerApp(token: string, store: PeerStore): FastifyInstance {
  const tokenHash = createHash("sha256").update(token).digest();
  // removeAdditional: false makes additionalProperties: false refuse unknown fields (Fastify's
  // default configuration would strip them silently).
  const app = Fastify({ logger: false, ajv: { customOptions: { removeAdditional: false } } });
  app.addHook("onRequest", async (request, reply) => {
    if (request.url === "/healthz") return;
    const header = request.headers.authorization ?? "";
    const presented = createHash("sha256")
      .update(header.startsWith("Bearer ") ? header.slice(7) : "")
      .digest();
    if (!timingSafeEqual(presented, tokenHash)) {
      return reply.code(401).send({ error: "unauthorized" });
    }
  });
  app.get("/healthz", async () => ({ status: "ok" }));
  app.post<{ Body: RunBody }>("/run", { schema: { body: runSchema } }, async (request, reply) => {
    const body = request.body;
    const jobId = peerJobId(CLIENT, body.request_id);
    await store.add(jobId, { ...body, client: CLIENT });
    reply.code(202).header("location", `/jobs/${jobId}`);
    return { job_id: jobId, request_id: body.request_id, route: body.route, status: "queued" };
  });
  app.get<{ Params: { id: string } }>("/jobs/:id", async (request, reply) => {
    const job = await store.get(request.params.id, CLIENT);
    return job ?? reply.code(404).send({ error: "not_found" });
  });
  return app;
}

/** Listens on 127.0.0.1, prints "LISTENING <port>", and closes app and store on SIGTERM/SIGINT. */
export async function servePeer(app: FastifyInstance, close: () => Promise<void>): Promise<void> {
  const address = await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 0) });
  process.stdout.write(`LISTENING ${new URL(address).port}\n`);
  const stop = async () => {
    await app.close();
    await close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop());
  process.on("SIGINT", () => void stop());
}
