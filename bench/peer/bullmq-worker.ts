/**
 * The peer's worker: a BullMQ Worker that echoes the input and, when the run had a callback_url,
 * POSTs a Standard Webhooks-signed job.completed callback (the standardwebhooks package, as a Node
 * user would). A failed callback fails the attempt, so BullMQ retries it.
 *
 * Env: REDIS_URL, PEER_PREFIX, WEBHOOK_SECRET, PEER_CONCURRENCY. Prints "READY".
 */
import { type Job, Worker } from "bullmq";
import { Webhook } from "standardwebhooks";
import { PREFIX, QUEUE, redisConnection } from "./common.ts";

interface JobData {
  client: string;
  request_id: string;
  route: string;
  input: string;
  callback_url?: string;
}

const webhook = new Webhook(process.env.WEBHOOK_SECRET ?? "");

async function processJob(job: Job<JobData>): Promise<string> {
  const output = job.data.input;
  if (job.data.callback_url) {
    const now = new Date();
    const body = JSON.stringify({
      type: "job.completed",
      timestamp: now.toISOString(),
      data: {
        job_id: job.id,
        request_id: job.data.request_id,
        route: job.data.route,
        status: "done",
        output,
        created_at: new Date(job.timestamp).toISOString(),
        completed_at: now.toISOString(),
      },
    });
    const id = `msg_${job.id}`;
    const res = await fetch(job.data.callback_url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "webhook-id": id,
        "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
        "webhook-signature": webhook.sign(id, now, body),
      },
      body,
    });
    if (!res.ok) throw new Error(`callback answered ${res.status}`);
  }
  return output;
}

const worker = new Worker<JobData, string>(QUEUE, processJob, {
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
