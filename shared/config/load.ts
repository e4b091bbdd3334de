import { readFile } from "node:fs/promises";
import { Value, type ValueError } from "@sinclair/typebox/value";
import { parse as parseYaml } from "yaml";
import { operationsIssues } from "./operations.ts";
import { type Config, ConfigSchema } from "./schema.ts";

/** A config problem: the dotted key it is about, and what is wrong. */
export interface ConfigIssue {
  readonly key: string;
  readonly message: string;
}

/** Start-up stops with this; its message lists every issue with the key it names. */
export class ConfigError extends Error {
  readonly code = "invalid_config";
  constructor(
    readonly source: string,
    readonly issues: readonly ConfigIssue[],
  ) {
    super(
      `invalid configuration in ${source}:\n${issues.map((i) => `  - ${i.key}: ${i.message}`).join("\n")}`,
    );
    this.name = "ConfigError";
  }
}

/** "/clients/0/token_sha256/1" → "clients[0].token_sha256[1]". */
export function pointerToKey(pointer: string): string {
  if (pointer === "") return "(root)";
  return pointer
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce(
      (key, part) => (/^\d+$/.test(part) ? `${key}[${part}]` : key ? `${key}.${part}` : part),
      "",
    );
}

/**
 * Replaces `${NAME}` in every string with the environment value, so secrets stay out of the file.
 * A missing variable is an issue naming the key that referenced it.
 */
function substituteEnv(
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  pointer: string,
  issues: ConfigIssue[],
  seen: WeakSet<object> = new WeakSet(),
): unknown {
  if (typeof value === "string") {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_, name: string) => {
      const found = env[name];
      if (found === undefined) {
        issues.push({
          key: pointerToKey(pointer),
          message: `environment variable ${name} is not set`,
        });
        return "";
      }
      return found;
    });
  }
  if (value !== null && typeof value === "object") {
    // YAML aliases can make a value contain itself; a config never needs that.
    if (seen.has(value)) {
      issues.push({ key: pointerToKey(pointer), message: "refers to itself through a YAML alias" });
      return null;
    }
    seen.add(value);
    const out = Array.isArray(value)
      ? value.map((v, i) => substituteEnv(v, env, `${pointer}/${i}`, issues, seen))
      : Object.fromEntries(
          Object.entries(value).map(([k, v]) => [
            k,
            substituteEnv(v, env, `${pointer}/${k}`, issues, seen),
          ]),
        );
    seen.delete(value);
    return out;
  }
  return value;
}

function describe(error: ValueError): string {
  const pattern: unknown = error.schema.pattern;
  if (typeof pattern === "string") return `must match ${pattern}`;
  return error.message.charAt(0).toLowerCase() + error.message.slice(1);
}

/** Checks that cannot be said in JSON Schema: unique ids and keys, and how clients authenticate. */
function crossCheck(config: Config): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seenClients = new Map<string, number>();
  config.clients.forEach((client, i) => {
    const earlier = seenClients.get(client.id);
    if (earlier !== undefined) {
      issues.push({
        key: `clients[${i}].id`,
        message: `duplicate client id (also clients[${earlier}])`,
      });
    }
    seenClients.set(client.id, i);
    if (client.token_sha256.length === 0 && client.jwt === undefined) {
      issues.push({ key: `clients[${i}]`, message: "needs token_sha256 or jwt to authenticate" });
    }
    if (client.jwt && !client.jwt.jwks_url === !client.jwt.public_key_pem) {
      issues.push({
        key: `clients[${i}].jwt`,
        message: "set exactly one of jwks_url or public_key_pem",
      });
    }
  });
  const seenRoutes = new Map<string, number>();
  config.routes.forEach((route, i) => {
    const earlier = seenRoutes.get(route.key);
    if (earlier !== undefined) {
      issues.push({
        key: `routes[${i}].key`,
        message: `duplicate route key (also routes[${earlier}])`,
      });
    }
    seenRoutes.set(route.key, i);
  });
  issues.push(...operationsIssues(config));
  return issues;
}

/**
 * Parses, substitutes `${ENV}` references, applies defaults and validates a YAML (or JSON) config.
 * Throws {@link ConfigError} naming every bad key; never returns a half-valid config.
 */
export function parseConfig(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  source = "config",
): Config {
  let raw: unknown;
  try {
    raw = parseYaml(text) ?? {};
  } catch (err) {
    throw new ConfigError(source, [
      { key: "(file)", message: `not valid YAML: ${(err as Error).message}` },
    ]);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new ConfigError(source, [{ key: "(root)", message: "must be a mapping" }]);
  }
  const issues: ConfigIssue[] = [];
  const substituted = substituteEnv(raw, env, "", issues);
  if (issues.length > 0) throw new ConfigError(source, issues);
  const withDefaults = Value.Default(ConfigSchema, Value.Clone(substituted));
  const schemaIssues = [...Value.Errors(ConfigSchema, withDefaults)].map((e) => ({
    key: pointerToKey(e.path),
    message: describe(e),
  }));
  if (schemaIssues.length > 0) {
    // Union members each report; keep the first message per key so the list stays readable.
    const firstPerKey = [...new Map(schemaIssues.map((i) => [i.key, i])).values()];
    throw new ConfigError(source, firstPerKey);
  }
  const config = withDefaults as Config;
  const cross = crossCheck(config);
  if (cross.length > 0) throw new ConfigError(source, cross);
  return config;
}

/** Reads and parses a config file; see {@link parseConfig}. */
export async function loadConfigFile(
  path: string,
  env: Readonly<Record<string, string | undefined>>,
): Promise<Config> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new ConfigError(path, [
      { key: "(file)", message: `cannot read: ${(err as Error).message}` },
    ]);
  }
  return parseConfig(text, env, path);
}
