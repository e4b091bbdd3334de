import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { Value } from "@sinclair/typebox/value";
import { parse as parseYaml } from "yaml";
import { semanticIssues } from "./checks.ts";
import { natsIssues } from "./nats-checks.ts";
import { operationsIssues } from "./operations.ts";
import { type ConfigIssue, schemaIssues as issuesOfError, pointerToKey } from "./schema-issues.ts";

export type { ConfigIssue };
export { pointerToKey };

import { type Config, ConfigSchema } from "./schema.ts";

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

/** Reads a file named by `${file:PATH}`; the entry point's filesystem by default. */
export type SecretFileReader = (path: string) => string;

const defaultReadFile: SecretFileReader = (path) => readFileSync(path, "utf8");

interface Substitution {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly readFile: SecretFileReader;
  readonly issues: ConfigIssue[];
  /** Files read for `${file:…}`, so a watcher can follow them too. */
  readonly files: Set<string>;
}

function substituteText(value: string, pointer: string, sub: Substitution): string {
  return value.replace(/\$\{(?:file:([^}]+)|([A-Za-z_][A-Za-z0-9_]*))\}/g, (_, file, name) => {
    if (typeof file === "string") {
      sub.files.add(file);
      try {
        // One trailing newline is what editors and `kubectl create secret --from-file` leave.
        return sub.readFile(file).replace(/\r?\n$/, "");
      } catch (err) {
        const reason = (err as { code?: string }).code ?? "unreadable";
        sub.issues.push({
          key: pointerToKey(pointer),
          message: `cannot read file ${file} (${reason})`,
        });
        return "";
      }
    }
    const found = sub.env[name as string];
    if (found === undefined) {
      sub.issues.push({
        key: pointerToKey(pointer),
        message: `environment variable ${name} is not set`,
      });
      return "";
    }
    return found;
  });
}

/**
 * Replaces `${NAME}` in every string with the environment value and `${file:PATH}` with the
 * contents of a file (secrets mounted as files can change without a restart), so secrets stay
 * out of the config file. A missing variable or file is an issue naming the key that referenced it.
 */
function substitute(
  value: unknown,
  pointer: string,
  sub: Substitution,
  seen: WeakSet<object> = new WeakSet(),
): unknown {
  if (typeof value === "string") return substituteText(value, pointer, sub);
  if (value !== null && typeof value === "object") {
    // YAML aliases can make a value contain itself; a config never needs that.
    if (seen.has(value)) {
      sub.issues.push({
        key: pointerToKey(pointer),
        message: "refers to itself through a YAML alias",
      });
      return null;
    }
    seen.add(value);
    const out = Array.isArray(value)
      ? value.map((v, i) => substitute(v, `${pointer}/${i}`, sub, seen))
      : Object.fromEntries(
          Object.entries(value).map(([k, v]) => [k, substitute(v, `${pointer}/${k}`, sub, seen)]),
        );
    seen.delete(value);
    return out;
  }
  return value;
}

/** True when `key` is `prefix` or lies under it ("clients[0]" holds "clients[0].jwt.issuer"). */
function under(key: string, prefix: string): boolean {
  return (
    key === prefix ||
    key.startsWith(`${prefix}.`) ||
    key.startsWith(`${prefix}[`) ||
    prefix.startsWith(`${key}.`) ||
    prefix.startsWith(`${key}[`)
  );
}

/**
 * Defaults that follow other keys: a route that does not set max_input_bytes gets at most the
 * body limit (an input larger than the body cannot arrive). Set explicitly above it, the route is
 * a problem the semantic checks name.
 */
function deriveDefaults(raw: unknown, config: unknown): void {
  const maxBody = (config as { server?: { max_body_bytes?: unknown } }).server?.max_body_bytes;
  const rawRoutes = (raw as { routes?: unknown }).routes;
  const routes = (config as { routes?: unknown }).routes;
  if (typeof maxBody !== "number" || !Array.isArray(rawRoutes) || !Array.isArray(routes)) return;
  routes.forEach((route: unknown, i) => {
    const given = rawRoutes[i] as { max_input_bytes?: unknown } | undefined;
    const target = route as { max_input_bytes?: unknown } | null;
    if (given?.max_input_bytes === undefined && typeof target?.max_input_bytes === "number") {
      target.max_input_bytes = Math.min(target.max_input_bytes, maxBody);
    }
  });
}

export interface ParseOptions {
  /** Reads `${file:PATH}` references; tests pass their own. */
  readonly readFile?: SecretFileReader;
  /** Receives the paths of the files read for `${file:…}` (a reload watches them). */
  readonly filesRead?: (paths: readonly string[]) => void;
  /** Receives what the file should change but that still works (a key under its former name). */
  readonly notices?: (notices: readonly ConfigIssue[]) => void;
}

/** Top-level keys under their former names, read as the new ones. */
const RENAMED_KEYS: Readonly<Record<string, string>> = {
  // "admin" named the health/metrics port, easily taken for the operator API (admin_api).
  admin: "monitoring",
};

/**
 * Moves keys with a former name to their name, with a notice naming both; both present is an
 * issue (which one was meant is not known).
 */
function renameKeys(raw: Record<string, unknown>, issues: ConfigIssue[]): ConfigIssue[] {
  const notices: ConfigIssue[] = [];
  for (const [former, name] of Object.entries(RENAMED_KEYS)) {
    if (!(former in raw)) continue;
    if (name in raw) {
      issues.push({ key: former, message: `is the former name of ${name}; keep only ${name}` });
      continue;
    }
    raw[name] = raw[former];
    delete raw[former];
    notices.push({ key: former, message: `is deprecated: rename it to ${name} (same settings)` });
  }
  return notices;
}

/**
 * Parses, substitutes `${ENV}` and `${file:PATH}` references, applies defaults and validates a
 * YAML (or JSON) config: the schema, then every semantic check (duplicates, secrets, CIDRs, keys,
 * limits) on the parts the schema accepted. Throws {@link ConfigError} listing every problem at
 * once, each with its key; never returns a half-valid config.
 */
export function parseConfig(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  source = "config",
  options: ParseOptions = {},
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
  const sub: Substitution = {
    env,
    readFile: options.readFile ?? defaultReadFile,
    issues: [],
    files: new Set(),
  };
  const renamed = { ...(raw as Record<string, unknown>) };
  const notices = renameKeys(renamed, sub.issues);
  const substituted = substitute(renamed, "", sub);
  options.filesRead?.([...sub.files]);
  const withDefaults = Value.Default(ConfigSchema, Value.Clone(substituted));
  // A missing key is reported both as missing and as not matching its type: keep the first
  // message per key so the list stays readable.
  const byKey = new Map<string, ConfigIssue>();
  for (const issue of [...Value.Errors(ConfigSchema, withDefaults)].flatMap(issuesOfError)) {
    if (!byKey.has(issue.key)) byKey.set(issue.key, issue);
  }
  const schemaIssues = [...byKey.values()];
  deriveDefaults(substituted, withDefaults);
  const substitutionKeys = new Set(sub.issues.map((i) => i.key));
  const issues = [...sub.issues, ...schemaIssues.filter((i) => !substitutionKeys.has(i.key))];
  const unclean = issues.map((i) => i.key);
  const clean = (prefix: string) => !unclean.some((key) => under(key, prefix));
  try {
    issues.push(...semanticIssues(withDefaults as Config, clean));
    issues.push(...operationsIssues(withDefaults as Config));
    issues.push(...natsIssues(withDefaults as Config, clean));
  } catch {
    // A shape the schema already refused; its issues are listed.
  }
  if (issues.length > 0) throw new ConfigError(source, issues);
  if (notices.length > 0) options.notices?.(notices);
  return withDefaults as Config;
}

/** Reads and parses a config file; see {@link parseConfig}. */
export async function loadConfigFile(
  path: string,
  env: Readonly<Record<string, string | undefined>>,
  options: ParseOptions = {},
): Promise<Config> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new ConfigError(path, [
      { key: "(file)", message: `cannot read: ${(err as Error).message}` },
    ]);
  }
  return parseConfig(text, env, path, options);
}
