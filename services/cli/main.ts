#!/usr/bin/env bun
/**
 * The `switchyard` command. This is the one module that reads process.env and argv: it turns them
 * into typed config and hands that to factories.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { hashToken } from "../../shared/auth/index.ts";
import { StoreOutdatedError } from "../../shared/bus/index.ts";
import { systemClock } from "../../shared/clock/index.ts";
import {
  type Config,
  ConfigError,
  loadConfigFile,
  parseConfig,
} from "../../shared/config/index.ts";
import { openDispatchIndex } from "../../shared/dispatch/index.ts";
import { connectHub } from "../../shared/hub/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { createLogger, type Logger } from "../../shared/log/index.ts";
import {
  type ManagedNatsServer,
  NatsServerNotFoundError,
  startNatsServer,
} from "../../shared/nats/index.ts";
import { createTracing } from "../../shared/telemetry/index.ts";
import { rebuildProjection } from "../projector/index.ts";
import {
  demoConfig,
  type RunningHub,
  SERVICE_NAMES,
  type ServiceName,
  startServices,
} from "../runtime/index.ts";
import { type AdminClient, createAdminClient } from "./admin-client.ts";
import { runAuditKeygen, runAuditVerify } from "./audit-command.ts";
import { runCallbacksApiCommand } from "./callbacks-api-command.ts";
import { runEventsCommand } from "./events-command.ts";
import { openConfiguredIndex, runIndexRebuild } from "./index-command.ts";
import { type OperatorIo, runJobsCommand } from "./jobs-command.ts";
import { runStatusCommand } from "./status-command.ts";

const env = process.env;
const USAGE = `usage: switchyard <command>

  up                          run every service in one process (embedded nats-server if NATS_URL is unset)
  serve <${SERVICE_NAMES.join("|")}>   run one service (how Kubernetes runs them)
  token new <client>          print a new client token once, and the hash for the config
  projector rebuild           recreate the job view from the event stream
  migrate                     bring a store written by Switchyard 0.1 to this version (stop 0.1 first)
  tools <compile|validate|stats|publish> ...   tool definitions (docs/tools.md)
  callbacks redeliver <job_id> [--client <id>]   send a settled completion callback again (NATS access)
  jobs <list|show|cancel|retry> ...            operator API: search, timeline, cancel, retry
  callbacks <failed|redeliver> [--where k=v]... operator API: failed callbacks, redeliver (bulk: dry run first)
  index rebuild               recreate the search index from the event stream
  events [--job id] [--client id] [--type t] [--since t] [--until t] [--from-seq n] [--limit n] [--follow] [--pretty]
  audit verify [--public-key file] [--file export.ndjson]   replay, compare views, check the signed chain
  audit keygen                key pair for signing audit checkpoints
  status                      streams, consumers, buckets, projector lag, jobs by status

environment: SWITCHYARD_CONFIG (default ./switchyard.yaml), NATS_URL, SWITCHYARD_LOG_LEVEL, NATS_SERVER_BIN,
  SWITCHYARD_ADMIN_URL and SWITCHYARD_OPERATOR_TOKEN (jobs, callbacks failed|redeliver --where)`;

const SHUTDOWN_TIMEOUT_MS = 25_000;

async function loadConfig(required: boolean): Promise<Config | undefined> {
  const configured = env.SWITCHYARD_CONFIG || undefined;
  const path = resolve(configured ?? "switchyard.yaml");
  if (!existsSync(path)) {
    if (required || configured) {
      throw new ConfigError(path, [
        { key: "(file)", message: "config file not found (set SWITCHYARD_CONFIG)" },
      ]);
    }
    return undefined;
  }
  const config = await loadConfigFile(path, env);
  return env.NATS_URL ? { ...config, nats: { ...config.nats, url: env.NATS_URL } } : config;
}

function logLevel(config?: Config): string {
  return env.SWITCHYARD_LOG_LEVEL ?? config?.log.level ?? "info";
}

/** Stops everything on SIGINT/SIGTERM within a bound, and exits 0 after a clean stop. */
function onShutdown(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down: intake stopped, finishing in-flight work");
    const timer = setTimeout(() => {
      logger.error("shutdown took too long; exiting");
      process.exit(1);
    }, SHUTDOWN_TIMEOUT_MS);
    stop()
      .then(() => {
        clearTimeout(timer);
        logger.info("stopped");
        process.exit(0);
      })
      .catch((err: unknown) => {
        logger.error({ err }, "shutdown failed");
        process.exit(1);
      });
  };
  process.on("SIGINT", () => handler("SIGINT"));
  process.on("SIGTERM", () => handler("SIGTERM"));
}

async function up(): Promise<void> {
  let config = await loadConfig(false);
  let nats: ManagedNatsServer | undefined;
  const bootLogger = createLogger({ level: logLevel(config), service: "switchyard" });
  // OTEL_* (docs/operations.md, "Traces"): checked before anything starts.
  const tracing = await createTracing({
    env,
    defaultServiceName: "switchyard",
    logger: bootLogger,
  });
  let natsUrl = env.NATS_URL ?? (config ? config.nats.url : undefined);
  if (!env.NATS_URL) {
    nats = await startNatsServer({ storeDir: resolve(".data/nats"), env });
    natsUrl = nats.url;
    bootLogger.info({ url: nats.url, store: ".data/nats" }, "embedded nats-server started");
    if (config) config = { ...config, nats: { ...config.nats, url: nats.url } };
  }
  let token: string | undefined;
  let callbackSecret: string | undefined;
  let operatorToken: string | undefined;
  if (!config) {
    const port = Number(env.SWITCHYARD_PORT ?? 8080);
    const demo = demoConfig(natsUrl ?? "", port);
    config = demo.config;
    token = demo.token;
    callbackSecret = demo.callbackSecret;
    operatorToken = demo.operatorToken;
  }
  const logger = createLogger({ level: logLevel(config), service: "switchyard" });
  let running: RunningHub;
  try {
    running = await startServices(SERVICE_NAMES, {
      config,
      logger,
      clock: systemClock,
      ids: randomIds,
      tracing,
    });
  } catch (err) {
    await nats?.stop();
    await tracing.shutdown();
    throw err;
  }
  const base = running.ingress?.url ?? "";
  if (token) {
    process.stdout.write(
      [
        "",
        "Switchyard is running in demo mode (no switchyard.yaml found).",
        `  base URL : ${base}`,
        `  client   : demo`,
        `  token    : ${token}   (new on every start; shown only here)`,
        `  routes   : demo.echo (builtin echo), demo.sleep (builtin sleep 2 s)`,
        "  callbacks: loopback and private callback_url targets are ALLOWED (demo only: callbacks.allow_private)",
        `  callback secret: ${callbackSecret}   (verify callbacks with it; new on every start)`,
        `  console  : ${base}/console   operator token: ${operatorToken}   (new on every start)`,
        "",
        "Try it:",
        `  curl -s -X POST ${base}/run -H 'Authorization: Bearer ${token}' -H 'Content-Type: application/json' \\`,
        `       -d '{"request_id":"hello-1","route":"demo.echo","input":"hello"}'`,
        `  curl -s ${base}/jobs/<job_id> -H 'Authorization: Bearer ${token}'`,
        "",
      ].join("\n"),
    );
  }
  onShutdown(logger, async () => {
    await running.stop();
    await tracing.shutdown();
    await nats?.stop();
  });
}

async function serve(name: string | undefined): Promise<void> {
  if (!SERVICE_NAMES.includes(name as ServiceName)) {
    throw new UsageError(`serve needs one of: ${SERVICE_NAMES.join(", ")}`);
  }
  const config = (await loadConfig(true)) as Config;
  const logger = createLogger({ level: logLevel(config), service: name as string });
  const tracing = await createTracing({ env, defaultServiceName: `switchyard-${name}`, logger });
  const running = await startServices([name as ServiceName], {
    config,
    logger,
    clock: systemClock,
    ids: randomIds,
    tracing,
  });
  onShutdown(logger, async () => {
    await running.stop();
    await tracing.shutdown();
  });
}

function tokenNew(client: string | undefined): void {
  if (!client || !/^[A-Za-z0-9_-]{1,64}$/.test(client)) {
    throw new UsageError("token new needs a client id ([A-Za-z0-9_-], up to 64 characters)");
  }
  const token = `sy_${client}_${randomBytes(32).toString("base64url")}`;
  process.stdout.write(
    [
      `token (shown once; give it to the client, store it nowhere else): ${token}`,
      "add the hash to the client's token_sha256 list in switchyard.yaml:",
      `  - id: ${client}`,
      `    token_sha256: ["${hashToken(token)}"]`,
      "",
    ].join("\n"),
  );
}

async function projectorRebuild(): Promise<void> {
  const config = (await loadConfig(true)) as Config;
  const logger = createLogger({ level: logLevel(config), service: "projector-rebuild" });
  const hub = await connectHub(config, logger, "projector-rebuild");
  try {
    const result = await rebuildProjection({ nc: hub.nc, js: hub.js, jsm: hub.jsm, logger });
    process.stdout.write(`rebuilt ${result.jobs} job views from ${result.events} events\n`);
  } finally {
    await hub.drain();
  }
}

/** `switchyard migrate`: brings a store written by 0.1 to this version (docs/operations.md). */
async function migrate(): Promise<number> {
  const config = (await loadConfig(true)) as Config;
  const logger = createLogger({ level: logLevel(config), service: "migrate" });
  const hub = await connectHub(config, logger, "migrate");
  try {
    const { migrateStore } = await import("../migrate/index.ts");
    const report = await migrateStore({
      js: hub.js,
      jsm: hub.jsm,
      meta: hub.meta,
      dispatch: await openDispatchIndex(hub.nc, {
        replicas: config.nats.replicas,
        ttlMs: 24 * 3_600_000,
      }),
      config,
      clock: systemClock,
      ids: randomIds,
      progress: process.stderr,
    });
    if (report.from === report.to || report.from === "fresh") {
      process.stdout.write(`store version ${report.to}: nothing to migrate\n`);
      return 0;
    }
    process.stdout.write(
      [
        `migrated the store from version ${report.from} to ${report.to}:`,
        `  deadline timers for open jobs: ${report.deadlineTimers}`,
        `  HTTP attempts to resend: ${report.resumedHttpAttempts}`,
        `  redelivery requests queued: ${report.callbackWakeups}`,
        `  old consumers removed: ${report.removedConsumers.join(", ") || "none"}`,
        "",
      ].join("\n"),
    );
    return 0;
  } finally {
    await hub.drain();
  }
}

class UsageError extends Error {}

const stdio = {
  stdout: (text: string) => void process.stdout.write(text),
  stderr: (text: string) => void process.stderr.write(text),
};

/** A NATS connection for a one-off command, from the config file (or NATS_URL alone). */
async function connectForCommand(name: string) {
  const config = (await loadConfig(false)) ?? parseConfig("{}", env, "defaults");
  const withUrl = env.NATS_URL
    ? { ...config, nats: { ...config.nats, url: env.NATS_URL } }
    : config;
  const logger = createLogger({ level: env.SWITCHYARD_LOG_LEVEL ?? "warn", service: name });
  return connectHub(withUrl, logger, name);
}

/** The operator API client of `jobs` and `callbacks`, from --url / SWITCHYARD_ADMIN_URL. */
async function operatorCommand(
  args: string[],
  run: (args: string[], client: AdminClient, io: OperatorIo) => Promise<number>,
): Promise<number> {
  const at = args.indexOf("--url");
  const url = at >= 0 ? args[at + 1] : env.SWITCHYARD_ADMIN_URL;
  const rest = at >= 0 ? [...args.slice(0, at), ...args.slice(at + 2)] : args;
  if (!url) throw new UsageError("set SWITCHYARD_ADMIN_URL (or --url) to the hub's base URL");
  const token = env.SWITCHYARD_OPERATOR_TOKEN;
  if (!token) throw new UsageError("set SWITCHYARD_OPERATOR_TOKEN to an operator token");
  return run(rest, createAdminClient({ baseUrl: url, token }), {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => void process.stderr.write(text),
    isTTY: process.stdout.isTTY === true,
    confirm: async (question) => {
      if (!process.stdin.isTTY) return false;
      process.stderr.write(question);
      for await (const line of console) return /^y(es)?$/i.test(line.trim());
      return false;
    },
  });
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "up":
      await up();
      return -1;
    case "serve":
      await serve(rest[0]);
      return -1;
    case "token":
      if (rest[0] !== "new") throw new UsageError("usage: switchyard token new <client>");
      tokenNew(rest[1]);
      return 0;
    case "projector":
      if (rest[0] !== "rebuild") throw new UsageError("usage: switchyard projector rebuild");
      await projectorRebuild();
      return 0;
    case "migrate":
      return migrate();
    case "events": {
      const hub = await connectForCommand("events");
      try {
        return await runEventsCommand(rest, hub.js, stdio);
      } finally {
        await hub.drain();
      }
    }
    case "audit":
      if (rest[0] === "keygen") return runAuditKeygen(stdio);
      if (rest[0] !== "verify") throw new UsageError("usage: switchyard audit <verify|keygen>");
      return runAuditVerify(
        rest.slice(1),
        () => connectForCommand("audit"),
        stdio,
        async () => {
          const config = await loadConfig(false);
          return config ? openConfiguredIndex(config) : undefined;
        },
      );
    case "status": {
      const hub = await connectForCommand("status");
      try {
        return await runStatusCommand(hub, stdio);
      } finally {
        await hub.drain();
      }
    }
    case "jobs":
      return operatorCommand(rest, runJobsCommand);
    case "index": {
      if (rest[0] !== "rebuild") throw new UsageError("usage: switchyard index rebuild");
      const config = (await loadConfig(true)) as Config;
      const logger = createLogger({ level: logLevel(config), service: "index-rebuild" });
      const hub = await connectHub(config, logger, "index-rebuild");
      try {
        return await runIndexRebuild({
          hub,
          config,
          logger,
          progress: process.stderr,
          stdout: stdio.stdout,
        });
      } finally {
        await hub.drain();
      }
    }
    case "callbacks": {
      // Through the operator API: listing, bulk redelivery, or any use with an admin URL.
      if (
        rest[0] === "failed" ||
        rest.includes("--where") ||
        rest.includes("--url") ||
        env.SWITCHYARD_ADMIN_URL
      ) {
        return operatorCommand(rest, runCallbacksApiCommand);
      }
      const config = (await loadConfig(true)) as Config;
      const { runCallbacksCommand } = await import("./callbacks-command.ts");
      return runCallbacksCommand(rest, {
        config,
        logger: createLogger({ level: logLevel(config), service: "callbacks" }),
        clock: systemClock,
        ids: randomIds,
        ...(env.USER ? { requestedBy: env.USER } : {}),
        stdout: (s) => process.stdout.write(s),
        stderr: (s) => process.stderr.write(s),
      });
    }
    case "tools": {
      const { runToolsCommand } = await import("./tools-command.ts");
      return runToolsCommand(rest, {
        stdout: (s) => process.stdout.write(s),
        stderr: (s) => process.stderr.write(s),
        env,
        stderrIsTTY: process.stderr.isTTY === true,
      });
    }
    case undefined:
    case "help":
    case "--help":
    case "-h":
      process.stdout.write(`${USAGE}\n`);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command '${command}'`);
  }
}

if (import.meta.main) {
  parseArgs({ args: Bun.argv.slice(2), strict: false, allowPositionals: true });
  main(Bun.argv.slice(2))
    .then((code) => {
      if (code >= 0) process.exit(code);
    })
    .catch((err: unknown) => {
      if (err instanceof UsageError) {
        process.stderr.write(`switchyard: ${err.message}\n\n${USAGE}\n`);
        process.exit(2);
      }
      if (
        err instanceof ConfigError ||
        err instanceof NatsServerNotFoundError ||
        err instanceof StoreOutdatedError
      ) {
        process.stderr.write(`switchyard: ${err.message}\n`);
        process.exit(1);
      }
      process.stderr.write(`switchyard: ${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    });
}

export { main };
