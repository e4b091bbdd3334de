/**
 * Checks JSON Schema cannot say, run on every part of a config that passed the schema, so that one
 * start-up attempt reports every problem with its key: duplicates, how clients authenticate,
 * secrets that will not work, CIDR entries, keys that do not parse, limits that contradict
 * each other. Nothing here connects anywhere; nothing here throws.
 */
import { createPrivateKey, createPublicKey } from "node:crypto";
import { executorIssues } from "../executor-kinds/index.ts";
import { CidrParseError, parseCidr } from "../net/index.ts";
import { webhookSecretProblem } from "../webhooks/index.ts";
import { credential } from "./clients.ts";
import type { ConfigIssue } from "./load.ts";
import type { ClientEntry, Config, RouteConfig } from "./schema.ts";

/** Says whether the schema found nothing wrong under a key. */
type Clean = (prefix: string) => boolean;

function checkJwt(client: ClientEntry, key: string, issues: ConfigIssue[], clean: Clean): void {
  const jwt = client.jwt;
  if (!jwt || !clean(key)) return;
  if (!jwt.jwks_url === !jwt.public_key_pem) {
    issues.push({ key, message: "set exactly one of jwks_url or public_key_pem" });
  }
  if (jwt.jwks_url !== undefined && !URL.canParse(jwt.jwks_url)) {
    issues.push({ key: `${key}.jwks_url`, message: "is not a URL" });
  }
  if (jwt.public_key_pem !== undefined) {
    try {
      createPublicKey(jwt.public_key_pem);
    } catch {
      issues.push({
        key: `${key}.public_key_pem`,
        message: "is not a PEM public key (-----BEGIN PUBLIC KEY----- …)",
      });
    }
  }
}

function checkClient(client: ClientEntry, i: number, issues: ConfigIssue[], clean: Clean): void {
  const key = `clients[${i}]`;
  const tokens = Array.isArray(client.token_sha256) ? client.token_sha256 : [];
  const secrets = Array.isArray(client.callback_secrets) ? client.callback_secrets : [];
  if (clean(`${key}.token_sha256`) && tokens.length === 0 && client.jwt === undefined) {
    issues.push({ key, message: "needs token_sha256 or jwt to authenticate" });
  }
  tokens.forEach((entry, j) => {
    if (!clean(`${key}.token_sha256[${j}]`)) return;
    if (Number.isNaN(credential(entry, "sha256").retireAtMs)) {
      issues.push({ key: `${key}.token_sha256[${j}].retire_at`, message: "is not a valid date" });
    }
  });
  secrets.forEach((entry, j) => {
    if (!clean(`${key}.callback_secrets[${j}]`)) return;
    const { value, retireAtMs } = credential(entry, "secret");
    const problem = webhookSecretProblem(value);
    const at =
      typeof entry === "string"
        ? `${key}.callback_secrets[${j}]`
        : `${key}.callback_secrets[${j}].secret`;
    if (problem) issues.push({ key: at, message: problem });
    if (Number.isNaN(retireAtMs)) {
      issues.push({
        key: `${key}.callback_secrets[${j}].retire_at`,
        message: "is not a valid date",
      });
    }
  });
  checkJwt(client, `${key}.jwt`, issues, clean);
}

function checkRoute(
  route: RouteConfig,
  i: number,
  config: Config,
  { issues, clean }: { issues: ConfigIssue[]; clean: Clean },
): void {
  const key = `routes[${i}]`;
  const maxBody = clean("server.max_body_bytes") ? config.server?.max_body_bytes : undefined;
  const fine = (k: string) => clean(`${key}.${k}`);
  if (maxBody !== undefined && fine("max_input_bytes") && route.max_input_bytes > maxBody) {
    issues.push({
      key: `${key}.max_input_bytes`,
      message: `is ${route.max_input_bytes}, above server.max_body_bytes (${maxBody}): such an input can never arrive; lower it or raise server.max_body_bytes`,
    });
  }
  // What only the executor's kind knows (a secret's form, a URL), under routes[i].executor.
  if (fine("executor")) issues.push(...executorIssues(route.executor, `${key}.executor`));
}

function checkCallbacks(config: Config, issues: ConfigIssue[], clean: Clean): void {
  const cidrs = config.callbacks?.allow_cidrs;
  if (!Array.isArray(cidrs)) return;
  cidrs.forEach((entry, i) => {
    if (!clean(`callbacks.allow_cidrs[${i}]`)) return;
    try {
      parseCidr(entry);
    } catch (err) {
      const reason = err instanceof CidrParseError ? err.message : "is not a CIDR block";
      issues.push({ key: `callbacks.allow_cidrs[${i}]`, message: reason });
    }
  });
}

function checkAudit(config: Config, issues: ConfigIssue[], clean: Clean): void {
  const pem = config.audit?.signing_key_pem;
  if (typeof pem !== "string" || !clean("audit.signing_key_pem")) return;
  try {
    const key = createPrivateKey(pem);
    if (key.asymmetricKeyType !== "ed25519") {
      issues.push({ key: "audit.signing_key_pem", message: "must be an Ed25519 private key" });
    }
  } catch {
    issues.push({
      key: "audit.signing_key_pem",
      message: "is not a PEM private key (switchyard audit keygen makes one)",
    });
  }
}

/** Duplicates of `keyOf` in `items`, reported at the later index. */
function duplicates<T>(
  items: readonly T[],
  keyOf: (item: T, i: number) => string[],
  where: (i: number) => string,
  what: string,
): ConfigIssue[] {
  const seen = new Map<string, number>();
  const issues: ConfigIssue[] = [];
  items.forEach((item, i) => {
    for (const value of keyOf(item, i)) {
      const earlier = seen.get(value);
      if (earlier !== undefined && earlier !== i) {
        const other = where(earlier).replace(/\.[a-z_0-9]+$/, "");
        issues.push({ key: where(i), message: `duplicate ${what} (also ${other})` });
      }
      seen.set(value, i);
    }
  });
  return issues;
}

/**
 * Every cross-key and semantic problem of `config`. `clean(prefix)` says whether the schema found
 * nothing wrong under a key, so each check only reads values of the shape it expects.
 */
export function semanticIssues(config: Config, clean: Clean): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const clients = Array.isArray(config.clients) ? config.clients : [];
  const routes = Array.isArray(config.routes) ? config.routes : [];
  issues.push(
    ...duplicates(
      clients,
      (c, i) => (clean(`clients[${i}].id`) ? [c.id] : []),
      (i) => `clients[${i}].id`,
      "client id",
    ),
    ...duplicates(
      clients,
      (c, i) =>
        clean(`clients[${i}].token_sha256`)
          ? [...new Set(c.token_sha256.map((e) => credential(e, "sha256").value))]
          : [],
      (i) => `clients[${i}].token_sha256`,
      "token hash: a token must identify one client",
    ),
    ...duplicates(
      routes,
      (r, i) => (clean(`routes[${i}].key`) ? [r.key] : []),
      (i) => `routes[${i}].key`,
      "route key",
    ),
  );
  clients.forEach((client, i) => {
    if (typeof client === "object" && client !== null) checkClient(client, i, issues, clean);
  });
  routes.forEach((route, i) => {
    if (typeof route === "object" && route !== null)
      checkRoute(route, i, config, { issues, clean });
  });
  checkCallbacks(config, issues, clean);
  checkAudit(config, issues, clean);
  return issues;
}
