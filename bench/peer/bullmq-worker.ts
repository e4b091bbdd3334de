/**
 * The Redis peer's worker: a BullMQ Worker that echoes the input and, when the run had a
 * callback_url, sends the signed callback (callback.ts). A failed callback fails the attempt, so
 * BullMQ retries it.
 *
 * Env: REDIS_URL, PEER_PREFIX, WEBHOOK_SECRET, PEER_CONCURRENCY. Prints "READY".
 */
import { type Job, Worker } from "bullmq";
import type { RunBody } from "./app.ts";
import { PREFIX, QUEUE, redisConnection } from "./bullmq-common.ts";
import { createCallbackSender } from "./callback.ts";

const sendCallback = createCallbackSender(process.env.WEBHOOK_SECRET ?? "");

async function processJob(job: Job<RunBody & { client: string }>): Promise<string> {
  const output = job.data.input;
  if (job.data.callback_url) {
    await sendCallback(job.data.callback_url, {
      job_id: job.id ?? "",
      request_id: job.data.request_id,
      route: job.data.route,
      output,
      created_at: new Date(job.timestamp).toISOString(),
      completed_at: new Date().toISOString(),
    });
  }
  return output;
}

const worker = new Worker<RunBody & { client: string }, string>(QUEUE, processJob, {
  connection: redisConnection(),
  prefix: PREFIX,
  concurrency: Number(process.env.PEER_CONCURRENCY ?? 64),
});
await worker.waitUntilReady();
process.stdout.write("READY\n");
const stop = async () => {
  await worker.close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
