/**
 * Why a connection to NATS is refused, as typed errors: a credential NATS rejects, a certificate
 * that does not verify, a file that cannot be read, a topology the service may not create. Each
 * names the config key to look at; none echoes a secret.
 */
import { accessSync, constants } from "node:fs";
import { AuthorizationError, PermissionViolationError } from "@nats-io/transport-node";
import type { Config } from "../config/index.ts";

/** NATS refused this connection's credential (nats.auth): retrying cannot help. */
export class NatsAuthRefusedError extends Error {
  readonly code = "nats_auth_refused";
  constructor(url: string, configured: string, answer: string) {
    super(
      `NATS at ${url} refused the connection: "${answer}". ${configured} Check nats.auth (and that the server knows this user).`,
    );
    this.name = "NatsAuthRefusedError";
  }
}

/** The TLS handshake with NATS failed (nats.tls): a certificate, CA or server name problem. */
export class NatsTlsError extends Error {
  readonly code = "nats_tls_failed";
  constructor(url: string, key: string, answer: string) {
    super(`TLS to NATS at ${url} failed: ${answer}. Check ${key}.`);
    this.name = "NatsTlsError";
  }
}

/**
 * A service without stream-management rights (nats.manage_topology: false) found a stream, bucket
 * or consumer missing or different from its config, and NATS refused to create or change it.
 */
export class TopologyNotSetUpError extends Error {
  readonly code = "topology_not_set_up";
  constructor(subject: string) {
    super(
      `NATS refused ${subject}: this service's NATS user may not create or change streams, buckets or consumers, and one it needs is missing or differs from the config (a new route, other replicas or limits). Run switchyard setup with the admin credential and this config, then start the service again.`,
    );
    this.name = "TopologyNotSetUpError";
  }
}

const TOPOLOGY_WRITE =
  /^\$JS\.API\.(STREAM\.(CREATE|UPDATE)|CONSUMER\.(CREATE|DURABLE\.CREATE|UPDATE))\./;

/** A refused attempt to create or change the topology, as {@link TopologyNotSetUpError}. */
export function asTopologyNotSetUp(err: unknown): TopologyNotSetUpError | undefined {
  const found = err instanceof PermissionViolationError ? err : (err as { cause?: unknown })?.cause;
  if (!(found instanceof PermissionViolationError)) return undefined;
  return TOPOLOGY_WRITE.test(found.subject) ? new TopologyNotSetUpError(found.subject) : undefined;
}

/** Node's codes for a certificate the client could not accept. */
const CERT_CODES = /^(ERR_TLS_|ERR_SSL_|UNABLE_TO_|CERT_|DEPTH_ZERO_|SELF_SIGNED_|ERR_OSSL_)/;

function describeAuth(nats: Config["nats"]): string {
  const auth = nats.auth;
  if (!auth) return "No credential is configured (nats.auth is not set).";
  if (auth.user !== undefined) return `It sent user ${auth.user} with nats.auth.password.`;
  const kind = (["token", "nkey_seed", "creds_file"] as const).find((k) => auth[k] !== undefined);
  return `It sent nats.auth.${kind ?? "(none)"}.`;
}

/** A file nats.tls or nats.auth.creds_file names cannot be read: nothing was sent to NATS. */
export class NatsFileError extends Error {
  readonly code = "nats_file_unreadable";
  constructor(key: string, path: string, reason: string) {
    super(`${key}: cannot read file ${path} (${reason}); not connecting to NATS without it.`);
    this.name = "NatsFileError";
  }
}

/** The first of nats.tls's and nats.auth.creds_file's files that cannot be read. */
export function unreadableFile(nats: Config["nats"]): NatsFileError | undefined {
  const files: [string, string | undefined][] = [
    ["nats.tls.ca_file", nats.tls?.ca_file],
    ["nats.tls.cert_file", nats.tls?.cert_file],
    ["nats.tls.key_file", nats.tls?.key_file],
    ["nats.auth.creds_file", nats.auth?.creds_file],
  ];
  for (const [key, path] of files) {
    if (path === undefined) continue;
    try {
      accessSync(path, constants.R_OK);
    } catch (err) {
      const reason = (err as { code?: string }).code ?? "unreadable";
      return new NatsFileError(key, path, reason);
    }
  }
  return undefined;
}

/**
 * A first-connection failure that no retry can fix: a refused credential, an untrusted or
 * mismatched certificate, a certificate file that cannot be read. Undefined for everything else.
 */
export function refusalOf(err: unknown, nats: Config["nats"], url: string): Error | undefined {
  if (err instanceof AuthorizationError) {
    return new NatsAuthRefusedError(url, describeAuth(nats), err.message);
  }
  const e = err as { code?: unknown; message?: unknown; cause?: unknown };
  const message = typeof e.message === "string" ? e.message : "";
  if (typeof e.code === "string" && CERT_CODES.test(e.code)) {
    const key =
      e.code === "ERR_TLS_CERT_ALTNAME_INVALID" ? "nats.tls.server_name" : "nats.tls.ca_file";
    return new NatsTlsError(url, key, message);
  }
  // nats.js reports an unreadable nats.tls file as a ConnectionError caused by the read.
  if (nats.tls && e.cause instanceof Error && /doesn't exist|ENOENT|EACCES/.test(message)) {
    return new NatsTlsError(url, "nats.tls", message);
  }
  return undefined;
}
