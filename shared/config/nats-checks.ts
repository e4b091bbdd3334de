/**
 * Checks on nats.auth and nats.tls that the schema cannot express: one credential kind and the
 * pairs that belong together. Messages never echo a secret. The files they name are checked when
 * the connection is made (shared/hub/connection.ts), where they are read: a config can be checked
 * away from the machine that holds them.
 */
import type { ConfigIssue } from "./load.ts";
import type { Config } from "./schema.ts";

type Clean = (prefix: string) => boolean;

const KINDS = ["user", "token", "nkey_seed", "creds_file"] as const;

function authIssues(auth: NonNullable<Config["nats"]["auth"]>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const set = KINDS.filter((k) => auth[k] !== undefined);
  if (set.length !== 1) {
    issues.push({
      key: "nats.auth",
      message: `set exactly one of user (with password), token, nkey_seed or creds_file; found ${set.length === 0 ? "none" : set.join(", ")}`,
    });
  }
  if (auth.user !== undefined && auth.password === undefined) {
    issues.push({ key: "nats.auth.password", message: "is required with nats.auth.user" });
  }
  if (auth.password !== undefined && auth.user === undefined) {
    issues.push({ key: "nats.auth.user", message: "is required with nats.auth.password" });
  }
  if (auth.nkey_seed !== undefined && !auth.nkey_seed.trim().startsWith("SU")) {
    issues.push({ key: "nats.auth.nkey_seed", message: "is not an NKey user seed (SU…)" });
  }
  return issues;
}

function tlsIssues(tls: NonNullable<Config["nats"]["tls"]>): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if ((tls.cert_file === undefined) !== (tls.key_file === undefined)) {
    const missing = tls.cert_file === undefined ? "cert_file" : "key_file";
    issues.push({
      key: `nats.tls.${missing}`,
      message: "is required: a client certificate needs both cert_file and key_file",
    });
  }
  return issues;
}

/** Every problem with nats.auth and nats.tls, each naming its key. */
export function natsIssues(
  config: { readonly nats: Pick<Config["nats"], "auth" | "tls"> },
  clean: Clean,
): ConfigIssue[] {
  const nats = config.nats;
  if (typeof nats !== "object" || nats === null) return [];
  return [
    ...(nats.auth && clean("nats.auth") ? authIssues(nats.auth) : []),
    ...(nats.tls && clean("nats.tls") ? tlsIssues(nats.tls) : []),
  ];
}
