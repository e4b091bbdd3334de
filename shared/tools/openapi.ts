import { type DiagnosticSink, docPath } from "./diagnostics.ts";
import type { NameCandidate } from "./naming.ts";
import { nameFromMethodPath, sanitizeName } from "./naming.ts";
import { buildContext, cutAtWord, filterExtensions, pickDescription } from "./record.ts";
import { type ReadDocument, SchemaExpander } from "./refs.ts";
import { applyOverrides, looksMutating, methodDefaults } from "./risk.ts";
import { isObject, type Json, type JsonObject } from "./schema-merge.ts";
import {
  type HttpMethod,
  LIMITS,
  type ParamLocation,
  TOOL_SCHEMA_VERSION,
  type ToolDefinition,
} from "./schemas.ts";

/** A tool whose final name is decided once every input has been compiled. */
export interface PendingTool {
  tool: ToolDefinition;
  candidate: NameCandidate;
}

export interface OpenApiInput {
  /** Name used in diagnostics (usually the file path as given). */
  label: string;
  doc: Json;
  /** Absolute path of the document, for relative-file $refs. */
  docId?: string;
  readDocument?: ReadDocument;
  /** "METHOD path" keys of operations an overlay changed. */
  overlayChanged?: ReadonlySet<string>;
}

const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
const PROPERTY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;
const TRANSPORT_HEADERS = new Set(["accept", "content-type", "content-length"]);
const CREDENTIAL_HEADERS = new Set(["authorization", "proxy-authorization", "cookie"]);

interface Entry {
  wire: string;
  name: string;
  in: ParamLocation;
  schema: Json;
  required: boolean;
}

interface Dialect {
  swagger2: boolean;
  credentialNames: { header: Set<string>; query: Set<string> };
  oauthSchemes: Set<string>;
}

function dialectOf(doc: JsonObject): Dialect {
  const swagger2 = doc.swagger === "2.0";
  const schemes = swagger2
    ? doc.securityDefinitions
    : isObject(doc.components)
      ? doc.components.securitySchemes
      : undefined;
  const header = new Set<string>();
  const query = new Set<string>();
  const oauthSchemes = new Set<string>();
  if (isObject(schemes)) {
    for (const [id, s] of Object.entries(schemes)) {
      if (!isObject(s)) continue;
      if (s.type === "apiKey" && typeof s.name === "string") {
        if (s.in === "header") header.add(s.name.toLowerCase());
        if (s.in === "query") query.add(s.name);
      }
      if (s.type === "oauth2" || s.type === "openIdConnect") oauthSchemes.add(id);
    }
  }
  return { swagger2, credentialNames: { header, query }, oauthSchemes };
}

/** Which OpenAPI family a parsed document belongs to, or undefined. */
export function openApiVersion(doc: unknown): "2.0" | "3.0" | "3.1" | "unsupported" | undefined {
  if (!isObject(doc)) return undefined;
  if ("swagger" in doc) return doc.swagger === "2.0" ? "2.0" : "unsupported";
  if (!("openapi" in doc)) return undefined;
  const v = String(doc.openapi);
  if (/^3\.0(\.|$)/.test(v)) return "3.0";
  if (/^3\.[1-9](\.|$)/.test(v)) return "3.1";
  return "unsupported";
}

/** Swagger 2.0 keeps schema keywords on the parameter itself. */
function swaggerParamSchema(p: JsonObject): JsonObject {
  const keys = [
    "type",
    "format",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
  ];
  const s: JsonObject = {};
  for (const k of keys) if (k in p) s[k] = p[k] as Json;
  return s;
}

function isFileSchema(s: Json): boolean {
  if (!isObject(s)) return false;
  if (s.format === "binary" || s.format === "base64" || typeof s.contentMediaType === "string")
    return true;
  return isObject(s.items) && isFileSchema(s.items);
}

/** Object bodies are spread at the top level; everything else goes under `body`. */
function spreadable(s: Json): s is JsonObject & { properties: JsonObject } {
  if (!isObject(s) || !isObject(s.properties)) return false;
  if ("oneOf" in s || "anyOf" in s || "allOf" in s || "$ref" in s) return false;
  if (s.type !== undefined && s.type !== "object") return false;
  return s.additionalProperties === undefined || s.additionalProperties === false;
}

function pickMediaType(content: JsonObject): string | undefined {
  const types = Object.keys(content);
  return (
    types.find((t) => /^application\/json\b/i.test(t)) ??
    types.find((t) => /\+json\b/i.test(t)) ??
    types.find((t) => /^application\/x-www-form-urlencoded\b/i.test(t)) ??
    types.find((t) => /^multipart\/form-data\b/i.test(t)) ??
    types[0]
  );
}

/**
 * Compiles the operations of one OpenAPI 3.0/3.1 or Swagger 2.0 document. Never throws for
 * malformed documents: every skipped or altered part is reported in `sink`.
 */
export function compileOpenApi(input: OpenApiInput, sink: DiagnosticSink): PendingTool[] {
  const { label } = input;
  const doc = input.doc;
  const version = openApiVersion(doc);
  if (!isObject(doc) || version === undefined || version === "unsupported") {
    sink.add(
      "input.unsupported_version",
      docPath(label, isObject(doc) && "swagger" in doc ? ["swagger"] : ["openapi"]),
      "only Swagger 2.0 and OpenAPI 3.0/3.1 are compiled",
    );
    return [];
  }
  const dialect = dialectOf(doc);
  const expander = new SchemaExpander(input.docId ?? label, doc, sink, input.readDocument);
  const out: PendingTool[] = [];
  const paths = doc.paths;
  if (!isObject(paths) || Object.keys(paths).length === 0) {
    sink.add("input.no_operations", docPath(label, ["paths"]), "the document has no paths");
    return out;
  }
  for (const [path, rawItem] of Object.entries(paths)) {
    const itemPtr = ["paths", path];
    expander.currentPath = docPath(label, itemPtr);
    const item = isObject(rawItem) ? expander.deref(rawItem)?.value : undefined;
    if (!path.startsWith("/") || !isObject(item)) {
      sink.add(
        "operation.invalid",
        docPath(label, itemPtr),
        `path item ${path} is not usable; skipped`,
      );
      continue;
    }
    for (const m of HTTP_METHODS) {
      if (!(m in item)) continue;
      const opPtr = [...itemPtr, m];
      const where = docPath(label, opPtr);
      if (m === "trace") {
        sink.add("operation.method_unsupported", where, `TRACE ${path} is not compiled`);
        continue;
      }
      const op = item[m];
      if (!isObject(op)) {
        sink.add(
          "operation.invalid",
          where,
          `${m.toUpperCase()} ${path} is not an object; skipped`,
        );
        continue;
      }
      expander.currentPath = where;
      const tool = compileOperation(
        doc,
        dialect,
        expander,
        input,
        path,
        item,
        m.toUpperCase() as HttpMethod,
        op,
        opPtr,
        sink,
      );
      if (tool) out.push(tool);
    }
  }
  if (out.length === 0 && !Object.values(paths).some(isObject)) {
    sink.add("input.no_operations", docPath(label, ["paths"]), "the document has no operations");
  }
  return out;
}

function compileOperation(
  doc: JsonObject,
  dialect: Dialect,
  expander: SchemaExpander,
  input: OpenApiInput,
  path: string,
  item: JsonObject,
  method: HttpMethod,
  op: JsonObject,
  opPtr: string[],
  sink: DiagnosticSink,
): PendingTool | undefined {
  const label = input.label;
  const where = docPath(label, opPtr);
  const operationId = typeof op.operationId === "string" ? op.operationId : undefined;

  let profile = methodDefaults(method);
  const safe = profile.readonly;
  if (
    safe &&
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
  profile = applyOverrides(profile, op, where, sink);
  if (profile.exclude) {
    sink.add("operation.excluded", where, `${method} ${path} excluded by x-service-exclude`);
    return undefined;
  }

  // Name
  let name: string;
  if (operationId !== undefined && operationId.trim() !== "") {
    name = sanitizeName(operationId.trim());
    if (name !== operationId) {
      sink.add(
        "name.sanitized",
        docPath(label, [...opPtr, "operationId"]),
        `operationId ${JSON.stringify(operationId)} became ${name}`,
      );
    }
  } else {
    name = nameFromMethodPath(method, path);
    sink.add(
      "name.generated",
      where,
      `no operationId; named ${name} from method and path`,
      "Add an operationId.",
    );
  }

  const description = pickDescription(
    [op.description, op.summary],
    `${method} ${path}`,
    where,
    sink,
  );

  // Inputs
  expander.beginTool();
  const entries: Entry[] = [];
  const params = new Map<string, { p: JsonObject; ptr: (string | number)[] }>();
  const collect = (list: Json | undefined, ptr: (string | number)[]) => {
    if (!Array.isArray(list)) return;
    list.forEach((raw, i) => {
      const pptr = [...ptr, i];
      const resolved = expander.deref(raw);
      const p = resolved?.value;
      if (!isObject(p) || typeof p.name !== "string" || typeof p.in !== "string") {
        if (resolved)
          sink.add("param.invalid", docPath(label, pptr), "parameter without name or in; skipped");
        return;
      }
      // Operation-level parameters override path-level ones with the same name and location.
      params.set(`${p.in}\u0000${p.name}`, { p, ptr: pptr });
    });
  };
  collect(item.parameters, ["paths", path, "parameters"]);
  collect(op.parameters, [...opPtr, "parameters"]);

  const form: Entry[] = [];
  let bodyInfo: { mediaType: string; encoding: string; wrapped: boolean } | undefined;
  let multipart = false;
  for (const { p, ptr } of params.values()) {
    const pname = p.name as string;
    const pin = p.in as string;
    const pwhere = docPath(label, ptr);
    if (pin === "cookie") {
      sink.add(
        "param.credential_excluded",
        pwhere,
        `cookie parameter ${pname} kept out of the tool inputs (cookies carry session credentials)`,
      );
      continue;
    }
    if (
      pin === "header" &&
      (CREDENTIAL_HEADERS.has(pname.toLowerCase()) ||
        dialect.credentialNames.header.has(pname.toLowerCase()))
    ) {
      sink.add(
        "param.credential_excluded",
        pwhere,
        `header ${pname} carries credentials; the executor supplies it`,
      );
      continue;
    }
    if (pin === "query" && dialect.credentialNames.query.has(pname)) {
      sink.add(
        "param.credential_excluded",
        pwhere,
        `query parameter ${pname} is an API key; the executor supplies it`,
      );
      continue;
    }
    if (pin === "header" && TRANSPORT_HEADERS.has(pname.toLowerCase())) {
      sink.add("param.header_ignored", pwhere, `header ${pname} is set by the transport`);
      continue;
    }
    if (pin === "body") {
      const schema = expander.expand(p.schema ?? {});
      bodyInfo = addBody(
        entries,
        schema,
        p.required === true,
        "application/json",
        "json",
        pwhere,
        sink,
      );
      continue;
    }
    let schema: Json;
    if (dialect.swagger2 && pin !== "body") schema = swaggerParamSchema(p);
    else if (p.schema !== undefined) schema = p.schema;
    else if (isObject(p.content)) {
      const mt = Object.keys(p.content)[0];
      const media = mt ? p.content[mt] : undefined;
      schema = isObject(media) && media.schema !== undefined ? media.schema : {};
    } else schema = {};
    let expanded = expander.expand(schema);
    if (isObject(expanded) && typeof p.description === "string" && !("description" in expanded)) {
      expanded = { ...expanded, description: cutAtWord(p.description, LIMITS.description) };
    }
    if (pin === "formData") {
      if (isFileSchema(expanded)) {
        multipart = true;
        sink.add("body.file_part", pwhere, `form field ${pname} is a file`);
      }
      form.push({
        wire: pname,
        name: pname,
        in: "body",
        schema: expanded,
        required: p.required === true,
      });
      continue;
    }
    if (pin !== "path" && pin !== "query" && pin !== "header") {
      sink.add("param.invalid", pwhere, `parameter ${pname} has unknown location ${pin}; skipped`);
      continue;
    }
    entries.push({
      wire: pname,
      name: pname,
      in: pin,
      schema: expanded,
      required: pin === "path" || p.required === true,
    });
  }

  if (form.length > 0) {
    const consumes = Array.isArray(op.consumes)
      ? op.consumes
      : Array.isArray(doc.consumes)
        ? doc.consumes
        : [];
    if (multipart || consumes.some((c) => typeof c === "string" && c.startsWith("multipart/"))) {
      sink.add("body.multipart", where, "multipart/form-data body mapped to properties");
      bodyInfo = { mediaType: "multipart/form-data", encoding: "multipart", wrapped: false };
    } else {
      sink.add("body.form_urlencoded", where, "form-urlencoded body mapped to properties");
      bodyInfo = {
        mediaType: "application/x-www-form-urlencoded",
        encoding: "form",
        wrapped: false,
      };
    }
    entries.push(...form);
  }

  if (op.requestBody !== undefined && !dialect.swagger2) {
    const rbPtr = [...opPtr, "requestBody"];
    const rbWhere = docPath(label, rbPtr);
    const rb = expander.deref(op.requestBody)?.value;
    const content = isObject(rb) && isObject(rb.content) ? rb.content : undefined;
    const mt = content ? pickMediaType(content) : undefined;
    if (isObject(rb) && content && mt) {
      if (Object.keys(content).length > 1) {
        sink.add(
          "body.media_type_chosen",
          rbWhere,
          `body offers ${Object.keys(content).join(", ")}; using ${mt}`,
        );
      }
      const media = content[mt];
      const rawSchema = isObject(media) && media.schema !== undefined ? media.schema : {};
      const schema = expander.expand(rawSchema);
      const required = rb.required === true;
      if (/json/i.test(mt)) {
        bodyInfo = addBody(entries, schema, required, mt, "json", rbWhere, sink);
      } else if (/^application\/x-www-form-urlencoded/i.test(mt)) {
        sink.add("body.form_urlencoded", rbWhere, "form-urlencoded body mapped to properties");
        bodyInfo = addBody(entries, schema, required, mt, "form", rbWhere, sink);
      } else if (/^multipart\//i.test(mt)) {
        sink.add(
          "body.multipart",
          rbWhere,
          `${mt} body mapped to properties; the executor encodes the parts`,
        );
        if (isObject(schema) && isObject(schema.properties)) {
          for (const [k, v] of Object.entries(schema.properties)) {
            if (isFileSchema(v))
              sink.add(
                "body.file_part",
                docPath(label, [...rbPtr, "content", mt, "schema", "properties", k]),
                `part ${k} is a file`,
              );
          }
        }
        bodyInfo = addBody(entries, schema, required, mt, "multipart", rbWhere, sink);
      } else {
        sink.add(
          "body.unsupported_media",
          rbWhere,
          `body media type ${mt} is passed as a raw value under body`,
        );
        bodyInfo = addBody(entries, schema, required, mt, "raw", rbWhere, sink, true);
      }
    } else if (rb !== undefined) {
      sink.add(
        "body.unsupported_media",
        rbWhere,
        "request body has no usable content; no body inputs",
      );
    }
  }

  const { properties, required, paramIn, wireNames } = mergeEntries(entries, where, sink);
  const inputSchema: ToolDefinition["inputSchema"] = { type: "object", properties };
  if (required.length > 0) inputSchema.required = required;
  inputSchema.additionalProperties = false;
  const defs = expander.toolDefs();
  if (Object.keys(defs).length > 0) inputSchema.$defs = defs;

  // Scope: OAuth2 scopes of the effective security requirement, else the first tag.
  let scope = profile.scope;
  if (scope === undefined) {
    const security = Array.isArray(op.security)
      ? op.security
      : Array.isArray(doc.security)
        ? doc.security
        : [];
    const scopes: string[] = [];
    for (const req of security) {
      if (!isObject(req)) continue;
      for (const [id, list] of Object.entries(req)) {
        if (!dialect.oauthSchemes.has(id) || !Array.isArray(list)) continue;
        for (const s of list)
          if (typeof s === "string" && s !== "" && !scopes.includes(s)) scopes.push(s);
      }
    }
    const firstTag = Array.isArray(op.tags)
      ? op.tags.find((t) => typeof t === "string" && t.trim() !== "")
      : undefined;
    scope =
      scopes.length > 0
        ? scopes.join(" ")
        : typeof firstTag === "string"
          ? firstTag.trim()
          : "default";
    if (scope.length > LIMITS.scope) {
      sink.add(
        "scope.truncated",
        where,
        `scope has ${scope.length} characters; cut to ${LIMITS.scope}`,
      );
      scope = scope.slice(0, LIMITS.scope).trimEnd();
    }
  }

  const extensions = filterExtensions(op, where, sink);
  if (Object.keys(wireNames).length > 0) extensions["x-service-wire-names"] = wireNames;
  if (bodyInfo) extensions["x-service-request-body"] = bodyInfo;

  const changed = input.overlayChanged?.has(`${method} ${path}`) === true;
  if (changed) sink.add("operation.overlay_changed", where, `an overlay changed ${method} ${path}`);

  let confirmPrompt = profile.confirmPrompt;
  if (confirmPrompt === "" && profile.confirmRequired) {
    confirmPrompt = cutAtWord(
      `Confirm ${method} ${path}: ${typeof op.summary === "string" ? op.summary : description}`,
      LIMITS.confirmPrompt,
    );
  }

  const tool: ToolDefinition = {
    schemaVersion: TOOL_SCHEMA_VERSION,
    name,
    source: changed ? "overlay" : "openapi",
    method,
    path,
    description,
    scope,
    risk: profile.risk,
    confirmRequired: profile.confirmRequired,
    rateLimitPerMin: profile.rateLimitPerMin,
    requiresSubject: profile.requiresSubject,
    sensitive: profile.sensitive,
    readonly: profile.readonly,
    idempotent: profile.idempotent,
    timeoutMs: profile.timeoutMs,
    confirmPrompt,
    ...(profile.confirmWhen ? { confirmWhen: profile.confirmWhen } : {}),
    context: buildContext(op.tags, where, sink),
    extensions,
    inputSchema,
    paramIn,
  };
  return { tool, candidate: { name, key: `openapi|${method} ${path}`, path: where } };
}

function addBody(
  entries: Entry[],
  schema: Json,
  required: boolean,
  mediaType: string,
  encoding: string,
  where: string,
  sink: DiagnosticSink,
  forceWrap = false,
): { mediaType: string; encoding: string; wrapped: boolean } {
  if (!forceWrap && spreadable(schema)) {
    const req =
      required && Array.isArray(schema.required)
        ? schema.required.filter((r) => typeof r === "string")
        : [];
    for (const [k, v] of Object.entries(schema.properties)) {
      entries.push({ wire: k, name: k, in: "body", schema: v, required: req.includes(k) });
    }
    return { mediaType, encoding, wrapped: false };
  }
  if (!forceWrap)
    sink.add(
      "body.wrapped",
      where,
      "the request body is not a plain object; it is passed as `body`",
    );
  entries.push({ wire: "body", name: "body", in: "body", schema, required });
  return { mediaType, encoding, wrapped: true };
}

/**
 * Puts every input into one flat object. Names that clash across locations are all renamed
 * `<name>__<in>`, so no input silently wins over another; the wire name is kept.
 */
function mergeEntries(
  entries: Entry[],
  where: string,
  sink: DiagnosticSink,
): {
  properties: JsonObject;
  required: string[];
  paramIn: Record<string, ParamLocation>;
  wireNames: Record<string, { in: ParamLocation; name: string }>;
} {
  for (const e of entries) {
    if (!PROPERTY_NAME.test(e.name)) {
      const fixed = (e.name.replace(/[^A-Za-z0-9_.-]/g, "_") || "_").slice(0, 64);
      sink.add(
        "param.name_sanitized",
        where,
        `${e.in} input ${JSON.stringify(e.wire)} is exposed as ${fixed}`,
      );
      e.name = fixed;
    }
  }
  const byName = new Map<string, Entry[]>();
  for (const e of entries) {
    const list = byName.get(e.name);
    if (list) list.push(e);
    else byName.set(e.name, [e]);
  }
  const taken = new Set(entries.map((e) => e.name));
  for (const [name, list] of byName) {
    if (list.length < 2) continue;
    const renamed: string[] = [];
    for (const e of list) {
      let next = `${name.slice(0, 56)}__${e.in}`;
      for (let i = 2; taken.has(next); i++) next = `${name.slice(0, 53)}__${e.in}_${i}`;
      taken.add(next);
      e.name = next;
      renamed.push(`${e.in} ${JSON.stringify(e.wire)} → ${next}`);
    }
    sink.add(
      "param.renamed",
      where,
      `inputs named ${JSON.stringify(name)} clash: ${renamed.join(", ")}`,
      "Rename one of them in the description, e.g. with an overlay.",
    );
  }
  const properties: JsonObject = {};
  const required: string[] = [];
  const paramIn: Record<string, ParamLocation> = {};
  const wireNames: Record<string, { in: ParamLocation; name: string }> = {};
  for (const e of entries) {
    properties[e.name] = e.schema;
    paramIn[e.name] = e.in;
    if (e.required && !required.includes(e.name)) required.push(e.name);
    if (e.name !== e.wire) wireNames[e.name] = { in: e.in, name: e.wire };
  }
  return { properties, required, paramIn, wireNames };
}
