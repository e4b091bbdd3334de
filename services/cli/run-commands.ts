/**
 * `switchyard up` and `switchyard serve <service>...`: long-running processes. Signals: SIGINT and
 * SIGTERM stop gracefully; SIGHUP reloads the configuration (so does a change of the file).
 */
import { randomBytes } from "node:crypto";
import { chmodSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { systemClock } from "../../shared/clock/index.ts";
import type { Config, ConfigIssue } from "../../shared/config/index.ts";
import type { ConnectWait } from "../../shared/hub/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { createLogger, type Logger } from "../../shared/log/index.ts";
import { type ManagedNatsServer, startNatsServer } from "../../shared/nats/index.ts";
import { createTracing } from "../../shared/telemetry/index.ts";
import {
  demoConfig,
  type RunningHub,
  SERVICE_NAMES,
  type ServiceName,
  setupTopology,
  startServices,
} from "../runtime/index.ts";
import { type FileStamp, stampFiles, watchConfig } from "./config-watch.ts";
import { configPath, DATA_DIR, type Env, loadConfig } from "./connect.ts";
import { type DataDirLock, lockDataDir, orphanedServer, processAlive } from "./data-dir.ts";
import { type SignalTrap, trapSignals } from "./signals.ts";

const SHUTDOWN_TIMEOUT_MS = 25_000;

function logLevel(env: Env, config?: Config): string {
  return env.SWITCHYARD_LOG_LEVEL ?? config?.log.level ?? "info";
}

/** Keys of the config file under a former name: they work, and the log says what to rename. */
function logNotices(logger: Logger, notices: readonly ConfigIssue[]): void {
  for (const notice of notices) {
    logger.warn({ key: notice.key }, `config: ${notice.key} ${notice.message}`);
  }
}

/** A visible countdown in the log while NATS does not answer at start. */
function natsWaitLogger(logger: Logger) {
  return (w: ConnectWait) =>
    logger.warn(
      {
        url: w.url,
        attempt: w.attempt,
        reason: w.reason,
        retry_in_s: Math.ceil(w.retryInMs / 1000),
        gives_up_in_s: Math.ceil(w.givesUpInMs / 1000),
      },
      `NATS at ${w.url} is not reachable; retrying in ${Math.ceil(w.retryInMs / 1000)} s (giving up in ${Math.ceil(w.givesUpInMs / 1000)} s)`,
    );
}

interface Lifecycle {
  readonly logger: Logger;
  readonly env: Env;
  readonly running: RunningHub;
  /** Whether a config file exists to reload. */
  readonly hasConfigFile: boolean;
  /** The config file and the files it references, as they were when the config was read. */
  readonly stamps: ReadonlyMap<string, FileStamp | null>;
  /** After the services stopped (the embedded server, the data directory lock). */
  readonly afterStop?: () => Promise<void>;
}

/** The services run: signals and file changes now reach them (see signals.ts). */
function attachLifecycle(trap: SignalTrap, life: Lifecycle): void {
  const { logger, running } = life;
  const watch = life.hasConfigFile
    ? watchConfig(
        {
          path: configPath(life.env),
          load: async (filesRead) =>
            (await loadConfig(life.env, true, {
              filesRead,
              notices: (notices) => logNotices(logger, notices),
            })) as Config,
          apply: running.reload,
          logger,
        },
        life.stamps,
      )
    : undefined;
  trap.attach({
    stop: async () => {
      watch?.stop();
      await running.stop();
      await life.afterStop?.();
    },
    ...(watch ? { reload: (reason: string) => void watch.reload(reason) } : {}),
  });
}

function trapStopAndReload(logger: Logger): SignalTrap {
  return trapSignals({ logger, shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS });
}

/** Stops a nats-server a SIGKILLed hub left on this store, before another one opens it. */
async function stopOrphan(dir: string, logger: Logger): Promise<void> {
  const pid = orphanedServer(dir);
  if (pid === undefined) return;
  logger.warn({ pid }, "stopping the nats-server a previous hub left running on this store");
  process.kill(pid, "SIGTERM");
  const deadline = Date.now() + 10_000;
  while (processAlive(pid) && Date.now() < deadline) await Bun.sleep(50);
  if (processAlive(pid)) process.kill(pid, "SIGKILL");
}

function demoBanner(
  base: string,
  monitoringUrl: string,
  demo: { token: string; callbackSecret: string; operatorToken: string },
) {
  return [
    "",
    "Switchyard is running in demo mode (no switchyard.yaml found).",
    `  base URL : ${base}   (Client API; operator API under /admin/v1)`,
    `  metrics  : ${monitoringUrl}/metrics   (monitoring port: healthz, readyz, metrics; not on the API port)`,
    "  client   : demo",
    `  token    : ${demo.token}   (new on every start; shown only here)`,
    "  routes   : demo.echo (builtin echo), demo.sleep (builtin sleep 2 s)",
    "  callbacks: loopback and private callback_url targets are ALLOWED (demo only: callbacks.allow_private)",
    `  callback secret: ${demo.callbackSecret}   (verify callbacks with it; new on every start)`,
    `  console  : ${base}/console   operator token: ${demo.operatorToken}   (new on every start)`,
    "",
    "For a shell (the SDK examples, curl, and `switchyard jobs …` from any folder):",
    `  export SWITCHYARD_URL=${base}`,
    `  export SWITCHYARD_TOKEN=${demo.token}`,
    `  export SWITCHYARD_OPERATOR_TOKEN=${demo.operatorToken}`,
    "",
    "Try it:",
    `  curl -s -X POST "$SWITCHYARD_URL/run" -H "Authorization: Bearer $SWITCHYARD_TOKEN" -H 'Content-Type: application/json' \\`,
    `       -d '{"request_id":"hello-1","route":"demo.echo","input":"hello"}'`,
    `  curl -s "$SWITCHYARD_URL/jobs/<job_id>" -H "Authorization: Bearer $SWITCHYARD_TOKEN"`,
    "  npx switchyard jobs list",
    "",
  ].join("\n");
}

/**
 * The embedded nats-server's config: its loopback clients need the token generated for this
 * start. Owner-only, like hub.json; never on the command line (ps would show it).
 */
/**
 * The embedded server's config (its token) and the token alone in `nats.token`, both readable by
 * their owner only: a NATS worker on this machine connects with NATS_TOKEN_FILE=.data/nats.token.
 */
function writeEmbeddedNatsConfig(dataDir: string, token: string): string {
  const path = resolve(dataDir, "nats.conf");
  writeFileSync(path, `authorization { token: "${token}" }\n`, { mode: 0o600 });
  chmodSync(path, 0o600);
  const tokenFile = resolve(dataDir, "nats.token");
  writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
  chmodSync(tokenFile, 0o600);
  return path;
}

/**
 * `switchyard up`: every service in one process. Without NATS_URL it starts an embedded
 * nats-server with its store in ./.data/nats, after locking ./.data: a second `up` in the same
 * folder is refused (two hubs on one store lose accepted jobs), and the server dies with this
 * process. ./.data/hub.json tells CLI commands in this folder which server to use.
 */
export async function up(env: Env, stdout: (text: string) => void): Promise<void> {
  const files: string[] = [];
  const notices: ConfigIssue[] = [];
  let config = await loadConfig(env, false, {
    filesRead: (paths) => files.push(...paths),
    notices: (found) => notices.push(...found),
  });
  const stamps = stampFiles([configPath(env), ...files]);
  const logger = createLogger({ level: logLevel(env, config), service: "switchyard" });
  logNotices(logger, notices);
  const trap = trapStopAndReload(logger);
  const dataDir = resolve(DATA_DIR);
  let lock: DataDirLock | undefined;
  let nats: ManagedNatsServer | undefined;
  let natsToken: string | undefined;
  // OTEL_* (docs/operations.md, "Traces"): checked before anything starts.
  const tracing = await createTracing({ env, defaultServiceName: "switchyard", logger });
  const cleanUp = async () => {
    await tracing.shutdown();
    await nats?.stop();
    lock?.release();
  };
  try {
    if (!env.NATS_URL) {
      lock = lockDataDir(dataDir);
      await stopOrphan(dataDir, logger);
      const storeDir = resolve(dataDir, "nats");
      natsToken = randomBytes(24).toString("base64url");
      // Out of the terminal's process group: Ctrl-C reaches the hub only, which drains and
      // then stops the server (cleanUp); the parent-death signal still stops it if the hub dies.
      nats = await startNatsServer({
        storeDir,
        env,
        ownProcessGroup: true,
        args: ["-c", writeEmbeddedNatsConfig(dataDir, natsToken)],
      });
      lock.record({
        nats_url: nats.url,
        nats_pid: nats.pid,
        store_dir: storeDir,
        nats_token: natsToken,
      });
      logger.info({ url: nats.url, store: storeDir }, "embedded nats-server started");
      if (!nats.diesWithParent) {
        logger.warn(
          "setpriv not found: the embedded nats-server outlives a killed hub; the next up stops it",
        );
      }
      if (config) config = { ...config, nats: { ...config.nats, url: nats.url } };
    }
    const demo = config
      ? undefined
      : demoConfig(nats?.url ?? env.NATS_URL ?? "", Number(env.SWITCHYARD_PORT ?? 8080));
    const configured = config ?? (demo as NonNullable<typeof demo>).config;
    // The embedded server is ours: its token replaces whatever credential the file names.
    const effective: Config = natsToken
      ? { ...configured, nats: { ...configured.nats, auth: { token: natsToken } } }
      : configured;
    const running = await startServices(SERVICE_NAMES, {
      config: effective,
      logger,
      clock: systemClock,
      ids: randomIds,
      onNatsWaiting: natsWaitLogger(logger),
      tracing,
    });
    const base = running.ingress?.url ?? "";
    if (nats && lock) {
      lock.record({
        nats_url: nats.url,
        nats_pid: nats.pid,
        store_dir: nats.storeDir,
        ...(natsToken ? { nats_token: natsToken } : {}),
        api_url: base,
        monitoring_url: running.monitoring.url,
      });
    }
    if (demo) stdout(demoBanner(base, running.monitoring.url, demo));
    attachLifecycle(trap, {
      logger,
      env,
      running,
      hasConfigFile: config !== undefined,
      stamps,
      afterStop: cleanUp,
    });
  } catch (err) {
    await cleanUp();
    throw err;
  }
}

/**
 * `switchyard serve <service>...`: the named services in one process, as Kubernetes runs them
 * (the read models together, the others alone). The log's `service` and the default tracing
 * service name join the names with "+", as the NATS connection's name does.
 */
export async function serve(names: readonly ServiceName[], env: Env): Promise<void> {
  const name = names.join("+");
  const files: string[] = [];
  const notices: ConfigIssue[] = [];
  const config = (await loadConfig(env, true, {
    filesRead: (paths) => files.push(...paths),
    notices: (found) => notices.push(...found),
  })) as Config;
  const stamps = stampFiles([configPath(env), ...files]);
  const logger = createLogger({ level: logLevel(env, config), service: name });
  logNotices(logger, notices);
  const trap = trapStopAndReload(logger);
  const tracing = await createTracing({ env, defaultServiceName: `switchyard-${name}`, logger });
  const running = await startServices(names, {
    config,
    logger,
    clock: systemClock,
    ids: randomIds,
    onNatsWaiting: natsWaitLogger(logger),
    tracing,
  });
  attachLifecycle(trap, {
    logger,
    env,
    running,
    hasConfigFile: true,
    stamps,
    afterStop: () => tracing.shutdown(),
  });
}

export { SERVICE_NAMES, type ServiceName };

/** `switchyard setup`: the admin's one-off creation of everything the services bind to. */
export async function setup(env: Env): Promise<void> {
  const config = (await loadConfig(env, true)) as Config;
  const logger = createLogger({ level: logLevel(env, config), service: "setup" });
  await setupTopology({ config, logger, clock: systemClock, ids: randomIds });
}
