/**
 * The Redis peer's HTTP server: what a Node user would build instead of Switchyard, written
 * plainly (app.ts), with BullMQ on Redis as its store. BullMQ adds a job whose id exists at most
 * once (it returns the existing one), which makes POST /run idempotent. The echo worker and its
 * signed callback are in bullmq-worker.ts.
 *
 * Env: PORT, PEER_TOKEN, REDIS_URL, PEER_PREFIX. Prints "LISTENING <port>".
 */
import { Queue } from "bullmq";
import { createPeerApp, type PeerStore, type RunBody, servePeer } from "./app.ts";
import { PREFIX, QUEUE, redisConnection } from "./bullmq-common.ts";

type JobData = RunBody & { client: string };

const queue = new Queue<JobData>(QUEUE, { connection: redisConnection(), prefix: PREFIX });

const STATUS: Record<string, string> = {
  completed: "done",
  failed: "error",
  active: "running",
  waiting: "queued",
  "waiting-children": "queued",
  prioritized: "queued",
  delayed: "queued",
};

const store: PeerStore = {
  async add(jobId, run) {
    // Retries as graphile-worker's defaults: 25 attempts, exponential backoff.
    await queue.add("run", run, {
      jobId,
      removeOnComplete: false,
      attempts: 25,
      backoff: { type: "exponential", delay: 1000 },
    });
  },
  async get(jobId, client) {
    const job = await queue.getJob(jobId);
    if (!job || job.data.client !== client) return undefined;
    const state = await job.getState();
    return {
      job_id: job.id ?? jobId,
      request_id: job.data.request_id,
      route: job.data.route,
      status: STATUS[state] ?? state,
      created_at: new Date(job.timestamp).toISOString(),
      ...(job.finishedOn ? { completed_at: new Date(job.finishedOn).toISOString() } : {}),
      ...(state === "completed" ? { output: job.returnvalue as string } : {}),
    };
  },
};

await servePeer(createPeerApp(process.env.PEER_TOKEN ?? "", store), () => queue.close());
