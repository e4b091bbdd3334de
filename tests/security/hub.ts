import { Writable } from "node:stream";
import { type ServiceName, startServices } from "../../services/runtime/run.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { type Config, parseConfig } from "../../shared/config/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { createLogger } from "../../shared/log/index.ts";
import { hubYaml, type TestClient } from "../helpers/hub.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";

/** Options of {@link startSecurityHub}. */
export interface SecurityHubOptions {
  readonly clients: readonly TestClient[];
  /** Keys merged into the `server` section (tests/helpers/hub.ts has no way to set them). */
  readonly server?: Record<string, unknown>;
  /** Extra top-level YAML, as in startHub. */
  readonly yaml?: string;
  /** Per client id: YAML lines appended to that client's entry (jwt, callback_secrets). */
  readonly clientYaml?: Readonly<Record<string, string>>;
  readonly services?: readonly ServiceName[];
  /** Environment for `${NAME}` references in the YAML. */
  readonly env?: Readonly<Record<string, string>>;
  /** Extra nats-server arguments (a config file with max_payload, ...). */
  readonly natsArgs?: readonly string[];
}

/** A running hub with a private nats-server; see {@link startSecurityHub}. */
export interface SecurityHub extends AsyncDisposable {
  readonly baseUrl: string;
  /** The ingress's body limit in force (configured, or derived from NATS max_payload). */
  readonly maxBodyBytes: number;
  readonly config: Config;
  readonly nats: TestNats;
  /** Every log line written so far, by every service of the hub. */
  logs(): string;
  stop(): Promise<void>;
}

const SERVER_LINE = "server: { host: 127.0.0.1, port: 0 }";

/**
 * Like tests/helpers/hub.ts startHub, but the `server` section and single clients can be extended:
 * the security tests need a different auth-failure budget, header limit or a JWT client.
 */
export async function startSecurityHub(options: SecurityHubOptions): Promise<SecurityHub> {
  const nats = await startNats({ args: options.natsArgs ?? [] });
  let yaml = hubYaml(nats.url, options.clients, options.yaml ?? "");
  if (!yaml.includes(SERVER_LINE)) throw new Error("hubYaml changed its server line");
  const server = { host: "127.0.0.1", port: 0, ...options.server };
  yaml = yaml.replace(SERVER_LINE, `server: ${JSON.stringify(server)}`);
  for (const [id, extra] of Object.entries(options.clientYaml ?? {})) {
    const anchor = `\n  - id: ${id}\n`;
    if (!yaml.includes(anchor)) throw new Error(`no client ${id} in the YAML`);
    const indented = extra
      .trim()
      .split("\n")
      .map((line) => `    ${line}`)
      .join("\n");
    yaml = yaml.replace(anchor, `${anchor}${indented}\n`);
  }
  const config = parseConfig(yaml, options.env ?? {}, "security test config");
  let captured = "";
  const destination = new Writable({
    write(chunk, _enc, done) {
      captured += chunk.toString();
      done();
    },
  });
  const logger = createLogger({ level: "debug", service: "security-test", destination });
  const running = await startServices(options.services ?? ["ingress", "projector"], {
    config,
    logger,
    clock: systemClock,
    ids: randomIds,
  }).catch(async (err: unknown) => {
    await nats.stop();
    throw err;
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await running.stop();
    await nats.stop();
  };
  return {
    baseUrl: running.ingress?.url ?? "",
    maxBodyBytes: running.ingress?.maxBodyBytes ?? 0,
    config,
    nats,
    logs: () => captured,
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
