/**
 * Which hub a CLI command talks to, decided the way `switchyard up` decides where its NATS is:
 * NATS_URL when set; else the server a `switchyard up` in this folder started (./.data/hub.json);
 * else the config file's nats.url. Never a guessed default: with none of these, the command says
 * so instead of creating streams on whatever listens on 127.0.0.1:4222.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import {
  type Config,
  ConfigError,
  type ConfigIssue,
  loadConfigFile,
  parseConfig,
} from "../../shared/config/index.ts";
import { connectHub, type HubConnection } from "../../shared/hub/index.ts";
import { createLogger } from "../../shared/log/index.ts";
import { DATA_DIR, runningHub } from "./data-dir.ts";

export type Env = Readonly<Record<string, string | undefined>>;

export { DATA_DIR };

/** The config file path: SWITCHYARD_CONFIG, else ./switchyard.yaml. */
export function configPath(env: Env): string {
  return resolve(env.SWITCHYARD_CONFIG || "switchyard.yaml");
}

export interface LoadHooks {
  /** Receives the paths of the files read for `${file:…}` (a reload watches them). */
  readonly filesRead?: (paths: readonly string[]) => void;
  /** Receives what the file should change but that still works (a key under a former name). */
  readonly notices?: (notices: readonly ConfigIssue[]) => void;
}

/**
 * Loads the config file: undefined when there is none (and none was named), a ConfigError naming
 * every problem otherwise. NATS_URL replaces nats.url.
 */
export async function loadConfig(
  env: Env,
  required: boolean,
  hooks: LoadHooks = {},
): Promise<Config | undefined> {
  const path = configPath(env);
  if (!existsSync(path)) {
    if (required || env.SWITCHYARD_CONFIG) {
      throw new ConfigError(path, [
        { key: "(file)", message: "config file not found (set SWITCHYARD_CONFIG)" },
      ]);
    }
    return undefined;
  }
  const config = await loadConfigFile(path, env, hooks);
  return env.NATS_URL ? { ...config, nats: { ...config.nats, url: env.NATS_URL } } : config;
}

/** No NATS_URL, no running `up` here, no config file: nothing says where the hub is. */
export class NoHubConfiguredError extends Error {
  readonly code = "no_hub";
  constructor() {
    super(
      "no hub to talk to: set NATS_URL, run this in the folder of a running `switchyard up`, or provide a config file (SWITCHYARD_CONFIG) with nats.url.",
    );
    this.name = "NoHubConfiguredError";
  }
}

/**
 * nats.url of the config file, read without the rest of the file: a command that only needs to
 * find NATS must not need the clients' secrets the file references.
 */
function natsUrlOfConfigFile(env: Env): string | undefined {
  const path = configPath(env);
  if (!existsSync(path)) return undefined;
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, "utf8"));
  } catch {
    return undefined;
  }
  const url = (doc as { nats?: { url?: unknown } } | null)?.nats?.url;
  if (typeof url !== "string") return undefined;
  return url.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => env[name] ?? "");
}

/** Who a command connects as: nats.auth, nats.tls and nats.inbox_prefix. */
type NatsIdentity = Pick<Config["nats"], "auth" | "tls" | "inbox_prefix">;

/**
 * nats.auth, nats.tls and nats.inbox_prefix of the config file, read (with their `${file:…}` and
 * `${ENV}` references) without the rest of the file: an auditor's file may hold only `nats:`.
 */
function natsIdentityOfConfigFile(env: Env): NatsIdentity {
  const path = configPath(env);
  if (!existsSync(path)) return {};
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(path, "utf8"));
  } catch {
    return {};
  }
  const section = (doc as { nats?: unknown } | null)?.nats;
  if (typeof section !== "object" || section === null) return {};
  const { auth, tls, inbox_prefix } = section as Record<string, unknown>;
  const wanted = Object.fromEntries(
    Object.entries({ auth, tls, inbox_prefix }).filter(([, v]) => v !== undefined),
  );
  const nats = parseConfig(JSON.stringify({ nats: wanted }), env, path).nats;
  return {
    ...(nats.auth ? { auth: nats.auth } : {}),
    ...(nats.tls ? { tls: nats.tls } : {}),
    ...(nats.inbox_prefix ? { inbox_prefix: nats.inbox_prefix } : {}),
  };
}

/** The NATS URL a command should use, where it came from, and who to connect as. */
export function locateNats(
  env: Env,
  explicit?: string,
): { url: string; from: string; identity?: NatsIdentity } {
  if (explicit) return { url: explicit, from: "--nats-url" };
  if (env.NATS_URL) return { url: env.NATS_URL, from: "NATS_URL" };
  const up = runningHub(resolve(DATA_DIR));
  if (up) {
    return {
      url: up.nats_url,
      from: `switchyard up (pid ${up.pid}) in this folder`,
      // The embedded server's token, from the owner-only hub.json.
      ...(up.nats_token ? { identity: { auth: { token: up.nats_token } } } : {}),
    };
  }
  const fromFile = natsUrlOfConfigFile(env);
  if (fromFile) return { url: fromFile, from: `nats.url of ${configPath(env)}` };
  throw new NoHubConfiguredError();
}

/**
 * The `nats` settings of a one-off command: where NATS is (see {@link locateNats}) and who to
 * connect as: the embedded server's token for the `up` in this folder, else nats.auth, nats.tls
 * and nats.inbox_prefix of the config file.
 */
export function commandNats(env: Env, explicitUrl?: string): Config["nats"] {
  const { url, identity } = locateNats(env, explicitUrl);
  const base = parseConfig("{}", {}, "defaults").nats;
  return { ...base, ...(identity ?? natsIdentityOfConfigFile(env)), url };
}

export interface CommandIo {
  readonly stderr: (text: string) => void;
  /** stderr is a terminal: show a countdown while NATS is unreachable. */
  readonly tty: boolean;
}

/**
 * Connects a one-off command to the hub without creating anything: the stream and buckets must
 * exist (HubNotFoundError otherwise). Reads only the secrets of nats.auth and nats.tls: never the
 * clients' secrets the rest of the config file names.
 */
export async function connectForCommand(
  name: string,
  env: Env,
  io: CommandIo,
  explicitUrl?: string,
): Promise<HubConnection> {
  const base = parseConfig("{}", {}, "defaults");
  const config: Config = { ...base, nats: commandNats(env, explicitUrl) };
  const logger = createLogger({ level: env.SWITCHYARD_LOG_LEVEL ?? "warn", service: name });
  return connectHub(config, logger, name, {
    createTopology: false,
    partitionsFromStore: true,
    onWaiting: (w) => {
      // A countdown for people; pipes stay quiet until the final error.
      if (io.tty) {
        io.stderr(
          `waiting for NATS at ${w.url} (${w.reason}); retry in ${Math.ceil(w.retryInMs / 1000)} s, giving up in ${Math.ceil(w.givesUpInMs / 1000)} s\n`,
        );
      }
    },
  });
}
