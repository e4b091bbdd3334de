import { docPath } from "../../diagnostics.ts";
import { nameFromMethodPath, sanitizeName } from "../../naming.ts";
import { buildContext, cutAtWord, filterExtensions, pickDescription } from "../../record.ts";
import { applyOverrides, looksMutating, methodDefaults, type RiskProfile } from "../../risk.ts";
import { isObject, type JsonObject } from "../../schema-merge.ts";
import {
  type HttpMethod,
  LIMITS,
  TOOL_SCHEMA_VERSION,
  type ToolDefinition,
} from "../../schemas.ts";
import { type BodyInfo, requestBodyStep } from "./body.ts";
import type { OpenApiDocument } from "./document.ts";
import { type Entry, inputSchemaStep } from "./merge.ts";
import { parametersStep } from "./parameters.ts";

/**
 * Everything the steps of one operation read and write. Planning (risk, naming, description)
 * runs for every operation first; building (parameters, request body, input schema, scope,
 * confirmation) runs later, one tool at a time, when the tool is written out.
 */
export interface OperationContext {
  readonly d: OpenApiDocument;
  readonly path: string;
  readonly item: JsonObject;
  readonly method: HttpMethod;
  readonly op: JsonObject;
  readonly opPtr: (string | number)[];
  /** `label#pointer` of the operation, where its diagnostics point. */
  readonly where: string;
  readonly operationId: string | undefined;
  profile: RiskProfile;
  name: string;
  description: string;
  entries: Entry[];
  bodyInfo?: BodyInfo;
}

export function operationContext(opts: {
  d: OpenApiDocument;
  path: string;
  item: JsonObject;
  method: HttpMethod;
  op: JsonObject;
  opPtr: (string | number)[];
}): OperationContext {
  const { op, method } = opts;
  return {
    ...opts,
    where: docPath(opts.d.label, opts.opPtr),
    operationId: typeof op.operationId === "string" ? op.operationId : undefined,
    profile: methodDefaults(method),
    name: "",
    description: "",
    entries: [],
  };
}

/** Risk: method defaults, a warning for safe methods that read like mutations, then overrides. */
export function riskStep(c: OperationContext): "excluded" | undefined {
  const { op, method, path, operationId, where } = c;
  const sink = c.d.sink;
  let profile = methodDefaults(method);
  if (
    profile.readonly &&
    !("x-service-readonly" in op) &&
    !("x-service-risk" in op) &&
    looksMutating(path, operationId)
  ) {
    profile = { ...profile, readonly: false, idempotent: false, risk: "medium" };
    sink.add(
      "risk.get_looks_mutating",
      where,
      `${method} ${path}${operationId ? ` (${operationId})` : ""} reads like a mutation; not marked read-only`,
      "Set x-service-readonly: true (or false) on the operation to decide explicitly.",
    );
  }
  c.profile = applyOverrides(profile, op, where, sink);
  if (!c.profile.exclude) return undefined;
  sink.add("operation.excluded", where, `${method} ${path} excluded by x-service-exclude`);
  return "excluded";
}

/** Naming: the operationId, sanitised, else one built from the method and path. */
export function namingStep(c: OperationContext): void {
  const { operationId, method, path, where } = c;
  const sink = c.d.sink;
  if (operationId !== undefined && operationId.trim() !== "") {
    c.name = sanitizeName(operationId.trim());
    if (c.name !== operationId) {
      sink.add(
        "name.sanitized",
        docPath(c.d.label, [...c.opPtr, "operationId"]),
        `operationId ${JSON.stringify(operationId)} became ${c.name}`,
      );
    }
    return;
  }
  c.name = nameFromMethodPath(method, path);
  sink.add(
    "name.generated",
    where,
    `no operationId; named ${c.name} from method and path`,
    "Add an operationId.",
  );
}

export function descriptionStep(c: OperationContext): void {
  c.description = pickDescription(
    [c.op.description, c.op.summary],
    `${c.method} ${c.path}`,
    c.where,
    c.d.sink,
  );
}

/** Scope: x-service-scope, else the OAuth2 scopes of the effective security, else the first tag. */
export function scopeStep(c: OperationContext): string {
  if (c.profile.scope !== undefined) return c.profile.scope;
  const { op, d } = c;
  const security = Array.isArray(op.security)
    ? op.security
    : Array.isArray(d.doc.security)
      ? d.doc.security
      : [];
  const scopes: string[] = [];
  for (const req of security) {
    if (!isObject(req)) continue;
    for (const [id, list] of Object.entries(req)) {
      if (!d.dialect.oauthSchemes.has(id) || !Array.isArray(list)) continue;
      for (const s of list)
        if (typeof s === "string" && s !== "" && !scopes.includes(s)) scopes.push(s);
    }
  }
  const firstTag = Array.isArray(op.tags)
    ? op.tags.find((t) => typeof t === "string" && t.trim() !== "")
    : undefined;
  let scope =
    scopes.length > 0
      ? scopes.join(" ")
      : typeof firstTag === "string"
        ? firstTag.trim()
        : "default";
  if (scope.length > LIMITS.scope) {
    d.sink.add(
      "scope.truncated",
      c.where,
      `scope has ${scope.length} characters; cut to ${LIMITS.scope}`,
    );
    scope = scope.slice(0, LIMITS.scope).trimEnd();
  }
  return scope;
}

/** Confirmation: the override's prompt, else `Confirm METHOD path: summary` when required. */
export function confirmationStep(c: OperationContext): string {
  const { profile, method, path, op } = c;
  if (profile.confirmPrompt !== "" || !profile.confirmRequired) return profile.confirmPrompt;
  return cutAtWord(
    `Confirm ${method} ${path}: ${typeof op.summary === "string" ? op.summary : c.description}`,
    LIMITS.confirmPrompt,
  );
}

/** Plans one operation; undefined when x-service-exclude removes it. */
export function planOperation(c: OperationContext): OperationContext | undefined {
  if (riskStep(c) === "excluded") return undefined;
  namingStep(c);
  descriptionStep(c);
  return c;
}

/** Builds the record of a planned operation under its final name. */
export function buildOperation(c: OperationContext, name: string): ToolDefinition {
  const { d, method, path, profile, where } = c;
  d.schemas.currentPath = where;
  c.entries = [];
  c.bodyInfo = undefined;
  parametersStep(c);
  requestBodyStep(c);
  const { inputSchema, paramIn, wireNames } = inputSchemaStep(c);
  const extensions = filterExtensions(c.op, where, d.sink);
  if (Object.keys(wireNames).length > 0) extensions["x-service-wire-names"] = wireNames;
  if (c.bodyInfo) extensions["x-service-request-body"] = c.bodyInfo;
  const changed = d.overlayChanged?.has(`${method} ${path}`) === true;
  if (changed)
    d.sink.add("operation.overlay_changed", where, `an overlay changed ${method} ${path}`);
  return {
    schemaVersion: TOOL_SCHEMA_VERSION,
    name,
    source: changed ? "overlay" : "openapi",
    method,
    path,
    description: c.description,
    scope: scopeStep(c),
    risk: profile.risk,
    confirmRequired: profile.confirmRequired,
    rateLimitPerMin: profile.rateLimitPerMin,
    requiresSubject: profile.requiresSubject,
    sensitive: profile.sensitive,
    readonly: profile.readonly,
    idempotent: profile.idempotent,
    timeoutMs: profile.timeoutMs,
    confirmPrompt: confirmationStep(c),
    ...(profile.confirmWhen ? { confirmWhen: profile.confirmWhen } : {}),
    context: buildContext(c.op.tags, where, d.sink),
    extensions,
    inputSchema,
    paramIn,
  };
}
