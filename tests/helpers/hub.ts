import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type RunningHub,
  SERVICE_NAMES,
  type ServiceName,
  startServices,
} from "../../services/runtime/run.ts";
import { hashToken } from "../../shared/auth/index.ts";
import { type Clock, manualClock, systemClock } from "../../shared/clock/index.ts";
import { type Config, parseConfig } from "../../shared/config/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import { captureLogger } from "./logs.ts";
import { startNats, type TestNats } from "./nats.ts";

export { manualClock };

export interface TestClient {
  readonly id: string;
  readonly token: string;
  readonly routes?: readonly string[];
  readonly runsPerMinute?: number;
  readonly callbackSecrets?: readonly string[];
}

export interface HubOptions {
  readonly clients?: readonly TestClient[];
  /** Extra top-level YAML (routes replace the default routes). */
  readonly yaml?: string;
  /** Keys merged into the `nats` section, e.g. { duplicate_window: "1s" }. */
  readonly natsOptions?: Record<string, unknown>;
  readonly services?: readonly ServiceName[];
  readonly nats?: TestNats;
  readonly clock?: Clock;
  /** Spans of every service; the test owns it (flushed when the hub stops). */
  readonly tracing?: Tracing;
}

export interface TestHub extends AsyncDisposable {
  readonly baseUrl: string;
  readonly nats: TestNats;
  readonly config: Config;
  readonly running: RunningHub;
  /** Every log line written so far. */
  logs(): string;
  /** fetch against the hub with a client's bearer token. */
  request(path: string, init?: RequestInit & { token?: string | null }): Promise<Response>;
  /** POST /run as JSON. */
  run(body: unknown, token: string, headers?: Record<string, string>): Promise<Response>;
  stop(): Promise<void>;
}

export const DEFAULT_CLIENTS: readonly TestClient[] = [
  { id: "acme", token: "acme-token-0123456789abcdef", routes: ["demo.*", "billing.invoice"] },
  { id: "globex", token: "globex-token-0123456789abcdef", routes: ["demo.*"] },
];

const DEFAULT_ROUTES = `
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.sleep
    executor: { kind: builtin, name: sleep, sleep_ms: 200 }
  - key: demo.small
    max_input_bytes: 16
    executor: { kind: builtin, name: echo }
  - key: demo.off
    enabled: false
    executor: { kind: builtin, name: echo }
  - key: billing.invoice
    executor: { kind: builtin, name: echo }
  - key: billing.secret
    executor: { kind: builtin, name: echo }
`;

let indexRoot: string | undefined;

/**
 * An `index:` section with a SQLite file of its own: the default path is under the working
 * directory, which test files running at once would share. The run's files live under one
 * temporary directory, removed after the last test file (tests/cleanup.ts).
 */
export function testIndexYaml(): string {
  indexRoot ??= mkdtempSync(join(tmpdir(), "switchyard-index-"));
  const dir = mkdtempSync(join(indexRoot, "hub-"));
  return `index: { sqlite_path: "${join(dir, "index.sqlite")}" }`;
}

/**
 * Removes the directory of every test hub's index. Called once, after every test file has run:
 * `bun test` does not emit the process's `exit` event, so a handler there never ran and each run
 * left a directory of SQLite files in the system's temporary directory.
 */
export function removeTestIndexRoot(): void {
  if (indexRoot !== undefined) rmSync(indexRoot, { recursive: true, force: true });
  indexRoot = undefined;
}

/** Builds the YAML config of a test hub. */
export function hubYaml(
  natsUrl: string,
  clients: readonly TestClient[],
  extra = "",
  natsOptions: Record<string, unknown> = {},
): string {
  const clientYaml = clients
    .map(
      (c) => `
  - id: ${c.id}
    token_sha256: ["${hashToken(c.token)}"]
    routes: ${JSON.stringify(c.routes ?? ["demo.*"])}
    runs_per_minute: ${c.runsPerMinute ?? 100000}${
      c.callbackSecrets ? `\n    callback_secrets: ${JSON.stringify(c.callbackSecrets)}` : ""
    }`,
    )
    .join("");
  const hasRoutes = /^routes:/m.test(extra);
  // A random monitoring port (metrics) unless the extra YAML sets its own.
  const monitoring = /^(monitoring|admin):/m.test(extra)
    ? ""
    : "monitoring: { host: 127.0.0.1, port: 0 }";
  return `
server: { host: 127.0.0.1, port: 0 }
${monitoring}
nats: ${JSON.stringify({ url: natsUrl, duplicate_window: "2m", ...natsOptions })}
log: { level: info }
clients:${clientYaml}
${hasRoutes ? "" : DEFAULT_ROUTES}
${extra}
${/^index:/m.test(extra) ? "" : testIndexYaml()}`;
}

/**
 * Starts a hub in this process (all services by default) against a private nats-server, with a log
 * capture. Use with `await using`.
 */
export async function startHub(options: HubOptions = {}): Promise<TestHub> {
  const nats = options.nats ?? (await startNats());
  const clients = options.clients ?? DEFAULT_CLIENTS;
  const config = parseConfig(
    hubYaml(nats.url, clients, options.yaml, options.natsOptions),
    {},
    "test config",
  );
  const { logger, logs } = captureLogger();
  const running = await startServices(options.services ?? SERVICE_NAMES, {
    config,
    logger,
    clock: options.clock ?? systemClock,
    ids: randomIds,
    ...(options.tracing ? { tracing: options.tracing } : {}),
  });
  const baseUrl = running.ingress?.url ?? "";
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await running.stop();
    if (!options.nats) await nats.stop();
  };
  const request = (path: string, init: RequestInit & { token?: string | null } = {}) => {
    const { token, ...rest } = init;
    const headers = new Headers(rest.headers);
    if (token) headers.set("authorization", `Bearer ${token}`);
    return fetch(`${baseUrl}${path}`, { ...rest, headers });
  };
  return {
    baseUrl,
    nats,
    config,
    running,
    logs,
    request,
    run: (body, token, headers = {}) =>
      request("/run", {
        method: "POST",
        token,
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(body),
      }),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
