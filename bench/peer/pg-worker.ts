/**
 * The PostgreSQL peer's worker: graphile-worker 0.17 (concurrency 64, as the Redis peer's) runs
 * each queued run: it marks the run done (one UPDATE, idempotent on a retry) and, when the run had
 * a callback_url, sends the signed callback (callback.ts). A failed callback fails the job, and
 * graphile-worker retries it with its exponential backoff (25 attempts by default).
 *
 * Batching as graphile-worker's performance guide describes it is on unless PG_BATCH=0: a local
 * queue (jobs fetched and locked concurrency + 1 at a time) and completions batched per turn
 * (completeJobBatchDelay 0).
 *
 * Env: PG_URL, WEBHOOK_SECRET, PEER_CONCURRENCY, PG_WORKER_POOL (default 16), PG_BATCH. Prints
 * "READY".
 */
import { run, type Task } from "graphile-worker";
import { createCallbackSender } from "./callback.ts";
import { PG_URL, quietLogger, type RunPayload, TASK } from "./pg-common.ts";

const sendCallback = createCallbackSender(process.env.WEBHOOK_SECRET ?? "");
const concurrency = Number(process.env.PEER_CONCURRENCY ?? 64);
const batching = process.env.PG_BATCH !== "0";

const MARK_DONE = `
UPDATE runs SET status = 'done', output = $2, completed_at = coalesce(completed_at, now())
WHERE job_id = $1 RETURNING completed_at`;

const runTask: Task = async (payload, helpers) => {
  const job = payload as RunPayload;
  const output = job.input;
  const { rows } = await helpers.query<{ completed_at: Date }>(MARK_DONE, [job.job_id, output]);
  if (job.callback_url) {
    await sendCallback(job.callback_url, {
      job_id: job.job_id,
      request_id: job.request_id,
      route: job.route,
      output,
      created_at: new Date(job.created_at).toISOString(),
      completed_at: (rows[0]?.completed_at ?? new Date()).toISOString(),
    });
  }
};

const runner = await run({
  connectionString: PG_URL,
  concurrency,
  maxPoolSize: Number(process.env.PG_WORKER_POOL ?? 16),
  noHandleSignals: true,
  logger: quietLogger,
  taskList: { [TASK]: runTask },
  ...(batching
    ? { preset: { worker: { localQueue: { size: concurrency + 1 }, completeJobBatchDelay: 0 } } }
    : {}),
});
process.stdout.write("READY\n");
const stop = async () => {
  await runner.stop();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
