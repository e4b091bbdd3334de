#!/usr/bin/env bun
/**
 * A runnable NATS worker: pulls the tasks of one route and answers with the input.
 *
 *   bun examples/worker/echo-worker.ts --nats nats://127.0.0.1:4222 --route demo.worker \
 *       [--concurrency 4] [--delay-ms 0]
 *
 * The route must be configured with `executor: { kind: nats }`; the executor service creates its
 * work queue, and until it exists the worker says so every 15 s and waits. Settings come from the
 * command line; its NATS credential and TLS files from the environment (never the command line,
 * which `ps` shows): NATS_USER with NATS_PASSWORD_FILE, or NATS_TOKEN_FILE, NATS_NKEY_SEED_FILE or
 * NATS_CREDS; NATS_TLS_CA, NATS_TLS_CERT, NATS_TLS_KEY, NATS_TLS_SERVER_NAME; NATS_INBOX_PREFIX
 * (deploy/nats/permissions.conf gives the `worker` user _INBOX_worker). It logs one line per task (never the input), rides out NATS restarts (it
 * reconnects and resumes pulling), and stops cleanly on SIGINT/SIGTERM: unfinished tasks go back
 * to the queue.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { connect } from "@nats-io/transport-node";
import {
  createWorker,
  type WorkerLogger,
  type WorkerNatsSettings,
  workerConnectOptions,
} from "../../shared/worker/index.ts";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: {
    nats: { type: "string", default: "nats://127.0.0.1:4222" },
    route: { type: "string" },
    concurrency: { type: "string", default: "4" },
    "delay-ms": { type: "string", default: "0" },
  },
});
if (!values.route) {
  process.stderr.write("echo-worker: --route <key> is required\n");
  process.exit(2);
}

const logger: WorkerLogger = {
  info: (obj, msg) => process.stdout.write(`${JSON.stringify({ level: "info", msg, ...obj })}\n`),
  warn: (obj, msg) => process.stdout.write(`${JSON.stringify({ level: "warn", msg, ...obj })}\n`),
  error: (obj, msg) => process.stderr.write(`${JSON.stringify({ level: "error", msg, ...obj })}\n`),
};
const delayMs = Number(values["delay-ms"]);

const env = process.env;
/** A secret from the file an environment variable names; one trailing newline dropped. */
const secretFile = (name: string) => {
  const path = env[name];
  return path ? readFileSync(path, "utf8").replace(/\r?\n$/, "") : undefined;
};
const password = secretFile("NATS_PASSWORD_FILE");
const token = secretFile("NATS_TOKEN_FILE");
const seed = secretFile("NATS_NKEY_SEED_FILE");
const auth = {
  ...(env.NATS_USER ? { user: env.NATS_USER } : {}),
  ...(password ? { password } : {}),
  ...(token ? { token } : {}),
  ...(seed ? { nkey_seed: seed } : {}),
  ...(env.NATS_CREDS ? { creds_file: env.NATS_CREDS } : {}),
};
const tls = {
  ...(env.NATS_TLS_CA ? { ca_file: env.NATS_TLS_CA } : {}),
  ...(env.NATS_TLS_CERT ? { cert_file: env.NATS_TLS_CERT } : {}),
  ...(env.NATS_TLS_KEY ? { key_file: env.NATS_TLS_KEY } : {}),
  ...(env.NATS_TLS_SERVER_NAME ? { server_name: env.NATS_TLS_SERVER_NAME } : {}),
};
const settings = (url: string): WorkerNatsSettings => ({
  url,
  name: "echo-worker",
  ...(Object.keys(auth).length > 0 ? { auth } : {}),
  ...(Object.keys(tls).length > 0 ? { tls } : {}),
  ...(env.NATS_INBOX_PREFIX ? { inbox_prefix: env.NATS_INBOX_PREFIX } : {}),
});

/** Connects, retrying while the server is not up yet; later disconnects reconnect forever. */
async function connectWithRetry(url: string) {
  // Checked once: a credential or file problem names its key and ends the worker.
  const options = workerConnectOptions(settings(url));
  for (let attempt = 1; ; attempt++) {
    try {
      return await connect(options);
    } catch (err) {
      const waitS = Math.min(attempt, 5);
      logger.warn({ url, err: (err as Error).message, retry_in_s: waitS }, "NATS not reachable");
      await Bun.sleep(waitS * 1000);
    }
  }
}

const nc = await connectWithRetry(values.nats);
void (async () => {
  for await (const status of nc.status()) {
    if (status.type === "disconnect") logger.warn({ url: values.nats }, "NATS disconnected");
    if (status.type === "reconnect") logger.info({ url: values.nats }, "NATS reconnected");
  }
})();
const worker = createWorker({
  nc,
  route: values.route,
  concurrency: Number(values.concurrency),
  logger,
  handler: async (task, ctx) => {
    // The job id is the idempotency key: a task can arrive twice (see docs/executors.md).
    logger.info({ job_id: task.job_id, delivery: ctx.delivery }, "task started");
    if (delayMs > 0) await Bun.sleep(delayMs);
    return task.input;
  },
});
await worker.start();
logger.info({ route: values.route, pid: process.pid }, "echo worker ready");

const shutdown = async () => {
  await worker.stop();
  await nc.drain();
  process.exit(0);
};
process.on("SIGINT", () => void shutdown());
process.on("SIGTERM", () => void shutdown());
