import type { DiagnosticSink } from "./diagnostics.ts";
import { methodDefaults, OVERRIDE_KEYS } from "./risk.ts";
import {
  type HttpMethod,
  LIMITS,
  METHODS,
  type ParamLocation,
  type Source,
  TOOL_SCHEMA_VERSION,
  type ToolDefinition,
} from "./schemas.ts";

/** Cuts text to `max` characters at a word boundary, ending with an ellipsis. */
export function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const room = text.slice(0, max - 1);
  const space = room.search(/\s\S*$/);
  const stem = space > max / 2 ? room.slice(0, space) : room;
  return `${stem.trimEnd()}…`;
}

/** Description rule: description, else summary, else "METHOD path"; at most 500 characters. */
export function pickDescription(
  candidates: readonly unknown[],
  fallback: string,
  path: string,
  sink: DiagnosticSink,
): string {
  let text = "";
  for (const c of candidates) {
    if (typeof c === "string" && c.trim() !== "") {
      text = c.trim();
      break;
    }
  }
  if (text === "") {
    sink.add(
      "description.fallback",
      path,
      `no description or summary; using "${fallback}"`,
      "Add a description.",
    );
    text = fallback;
  }
  if (text.length > LIMITS.description) {
    sink.add(
      "description.truncated",
      path,
      `description has ${text.length} characters; cut to ${LIMITS.description} at a word boundary`,
      "Write a shorter description, e.g. with an overlay.",
    );
    text = cutAtWord(text, LIMITS.description);
  }
  return text;
}

/** Tags → context: strings only, each 1–100 characters, at most 50. */
export function buildContext(tags: unknown, path: string, sink: DiagnosticSink): string[] {
  if (!Array.isArray(tags)) return [];
  const out: string[] = [];
  for (const t of tags) {
    if (typeof t !== "string" || t.trim() === "") continue;
    let tag = t.trim();
    if (tag.length > LIMITS.contextItemLength) {
      sink.add(
        "context.truncated",
        path,
        `tag "${cutAtWord(tag, 40)}" cut to ${LIMITS.contextItemLength} characters`,
      );
      tag = cutAtWord(tag, LIMITS.contextItemLength);
    }
    if (!out.includes(tag)) out.push(tag);
  }
  if (out.length > LIMITS.contextItems) {
    sink.add(
      "context.truncated",
      path,
      `${out.length} tags; only the first ${LIMITS.contextItems} are kept`,
    );
    out.length = LIMITS.contextItems;
  }
  return out;
}

const KEPT_EXTENSION = /^x-(ai|service|business)-/;

/**
 * Keeps x-ai-, x-service- and x-business- keys (except the overrides the compiler consumed)
 * and reports the others in one info diagnostic.
 */
export function filterExtensions(
  node: Record<string, unknown>,
  path: string,
  sink: DiagnosticSink,
): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  const dropped: string[] = [];
  for (const [k, v] of Object.entries(node)) {
    if (!k.startsWith("x-")) continue;
    if ((OVERRIDE_KEYS as readonly string[]).includes(k)) continue;
    if (KEPT_EXTENSION.test(k)) kept[k] = v;
    else dropped.push(k);
  }
  if (dropped.length > 0) {
    sink.add(
      "extension.dropped",
      path,
      `extensions not copied (only x-ai-, x-service-, x-business- are kept): ${dropped.join(", ")}`,
    );
  }
  return kept;
}

/** Sorts object keys recursively so equal values serialise identically. */
export function sortKeys<T>(value: T): T {
  if (Array.isArray(value)) return value.map(sortKeys) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value).sort())
      out[k] = sortKeys((value as Record<string, unknown>)[k]);
    return out as T;
  }
  return value;
}

/** The fields a hand-written tool (manual file or defineTool) may leave out. */
export type ToolSpec = Partial<Omit<ToolDefinition, "name" | "description">> & {
  name: string;
  description: string;
};

/**
 * Fills the defaults for a hand-written tool: method POST, path /tools/<name>, risk fields from
 * the method, scope "default", every input property travelling in the body (query for GET).
 * The result may still be invalid; callers validate it.
 */
export function completeToolRecord(
  spec: Record<string, unknown>,
  source: Source,
): Record<string, unknown> {
  const method = (
    typeof spec.method === "string" &&
    (METHODS as readonly string[]).includes(spec.method.toUpperCase())
      ? spec.method.toUpperCase()
      : (spec.method ?? "POST")
  ) as HttpMethod;
  const defaults = methodDefaults(
    (METHODS as readonly string[]).includes(method) ? method : "POST",
  );
  const inputSchema =
    spec.inputSchema && typeof spec.inputSchema === "object"
      ? spec.inputSchema
      : { type: "object", properties: {}, additionalProperties: false };
  const props = (inputSchema as { properties?: unknown }).properties;
  const loc: ParamLocation = method === "GET" || method === "HEAD" ? "query" : "body";
  const paramIn: Record<string, ParamLocation> = {};
  if (props && typeof props === "object") for (const k of Object.keys(props)) paramIn[k] = loc;
  const name = typeof spec.name === "string" ? spec.name : "";
  const out: Record<string, unknown> = {
    schemaVersion: TOOL_SCHEMA_VERSION,
    name,
    source,
    method,
    path: `/tools/${name}`,
    description: spec.description,
    scope: "default",
    risk: defaults.risk,
    confirmRequired: defaults.confirmRequired,
    rateLimitPerMin: defaults.rateLimitPerMin,
    requiresSubject: defaults.requiresSubject,
    sensitive: defaults.sensitive,
    readonly: defaults.readonly,
    idempotent: defaults.idempotent,
    timeoutMs: defaults.timeoutMs,
    confirmPrompt: defaults.confirmPrompt,
    context: [],
    extensions: {},
    inputSchema,
    paramIn,
  };
  for (const [k, v] of Object.entries(spec)) if (k !== "method" && v !== undefined) out[k] = v;
  if (!("confirmRequired" in spec) && "risk" in spec) out.confirmRequired = spec.risk === "high";
  out.schemaVersion = spec.schemaVersion ?? TOOL_SCHEMA_VERSION;
  out.source = source;
  return out;
}
