/**
 * Connect options for a NATS worker, with the same credential and TLS settings as the hub's
 * services (nats.auth, nats.tls, nats.inbox_prefix; docs/config.md): a worker runs under its own
 * NATS user (deploy/nats/permissions.conf, `worker`), never with the hub's admin credential.
 */
import type { NodeConnectionOptions } from "@nats-io/transport-node";
import {
  ConfigError,
  type NatsAuthConfig,
  type NatsTlsConfig,
  natsIssues,
} from "../config/index.ts";
import { identityOptions } from "../nats/index.ts";

export interface WorkerNatsSettings {
  /** One URL or several, comma-separated. */
  readonly url: string;
  readonly auth?: NatsAuthConfig;
  readonly tls?: NatsTlsConfig;
  /** The worker user's reply-inbox prefix (`_INBOX_worker` in deploy/nats/permissions.conf). */
  readonly inbox_prefix?: string;
  /** The connection name the server shows. */
  readonly name?: string;
}

/**
 * Checks the settings as the hub checks its config (ConfigError naming nats.auth… or nats.tls…)
 * and returns nats.js connect options that reconnect forever. Secrets are never logged here.
 */
export function workerConnectOptions(settings: WorkerNatsSettings): NodeConnectionOptions {
  const issues = natsIssues({ nats: settings }, () => true);
  if (issues.length > 0) throw new ConfigError("worker nats settings", issues);
  return {
    servers: settings.url.split(","),
    name: settings.name ?? "switchyard-worker",
    maxReconnectAttempts: -1,
    ...identityOptions(settings),
  };
}
