import { type DiagnosticSink, docPath } from "../../diagnostics.ts";
import { checkInputSchema } from "../../json-schema.ts";
import { sanitizeName } from "../../naming.ts";
import { buildContext, pickDescription } from "../../record.ts";
import { DEFAULT_TIMEOUT_MS } from "../../risk.ts";
import { isObject, type Json, type JsonObject } from "../../schema-merge.ts";
import {
  type ParamLocation,
  type Risk,
  TOOL_SCHEMA_VERSION,
  type ToolDefinition,
} from "../../schemas.ts";
import { type PlannedTool, plannedRecord, type SourceContext, type ToolSource } from "../types.ts";

/** MCP tools are called through tools/call, so they get a synthetic method and path. */
export const MCP_METHOD = "POST" as const;

/** `/mcp/tools/<url-encoded tool name>`; the executor maps it to a tools/call request. */
export function mcpToolPath(name: string): string {
  return `/mcp/tools/${encodeURIComponent(name)}`;
}

/** Finds the tool list in a tools/list result, a JSON-RPC response, or a bare array. */
export function mcpToolList(doc: unknown): unknown[] | undefined {
  if (Array.isArray(doc)) return doc;
  if (!isObject(doc)) return undefined;
  if (Array.isArray(doc.tools)) return doc.tools;
  if (isObject(doc.result) && Array.isArray(doc.result.tools)) return doc.result.tools;
  return undefined;
}

/**
 * Maps MCP tool annotations to the record. The MCP defaults apply when a hint is missing:
 * readOnlyHint false and destructiveHint true, so an unannotated tool is a high-risk,
 * confirm-first tool until someone says otherwise.
 */
export function mcpRisk(annotations: unknown): {
  readonly: boolean;
  idempotent: boolean;
  risk: Risk;
  annotated: boolean;
} {
  const a = isObject(annotations) ? annotations : {};
  const annotated = typeof a.readOnlyHint === "boolean" || typeof a.destructiveHint === "boolean";
  const readonly = a.readOnlyHint === true;
  const destructive = readonly ? false : a.destructiveHint !== false;
  const idempotent = readonly || a.idempotentHint === true;
  return {
    readonly,
    idempotent,
    risk: readonly ? "low" : destructive ? "high" : "medium",
    annotated,
  };
}

/** Plans the tools of an MCP tools/list result. `label` names the file or server in diagnostics. */
function planMcpTools(doc: Json, label: string, ctx: SourceContext): PlannedTool[] {
  const sink = ctx.sink;
  const list = mcpToolList(doc);
  const out: PlannedTool[] = [];
  if (!list) {
    sink.add(
      "mcp.tool_invalid",
      `${label}#`,
      "no tools array found (expected a tools/list result)",
    );
    return out;
  }
  const listPtr = Array.isArray(doc)
    ? []
    : isObject(doc) && Array.isArray(doc.tools)
      ? ["tools"]
      : ["result", "tools"];
  list.forEach((raw, i) => {
    const seq = ctx.startTool();
    const ptr = [...listPtr, i];
    const where = docPath(label, ptr);
    if (!isObject(raw) || typeof raw.name !== "string" || raw.name === "") {
      sink.add("mcp.tool_invalid", where, "tool without a name; skipped");
      return;
    }
    const schema = objectSchema(raw, where, sink);
    if (!schema) return;
    const tool = mcpRecord({ raw, schema, where, sink });
    tool.inputSchema = checkInputSchema(schema, {
      label,
      pointer: [...ptr, "inputSchema"],
      sink,
    }) as ToolDefinition["inputSchema"];
    out.push(
      plannedRecord(seq, { name: tool.name, key: `mcp|${raw.name}`, path: where, seq }, tool),
    );
  });
  return out;
}

/** The tool's inputSchema as an object schema (type and properties added), or undefined (reported). */
function objectSchema(
  raw: JsonObject,
  where: string,
  sink: DiagnosticSink,
): JsonObject | undefined {
  const original = raw.name as string;
  const schema = raw.inputSchema ?? {};
  if (!isObject(schema) || (schema.type !== undefined && schema.type !== "object")) {
    sink.add(
      "mcp.tool_invalid",
      `${where}/inputSchema`,
      `tool ${original}: inputSchema is not an object schema; skipped`,
    );
    return undefined;
  }
  if (schema.type === "object" && isObject(schema.properties)) return schema;
  sink.add(
    "mcp.schema_fixed",
    `${where}/inputSchema`,
    `tool ${original}: added type "object" and properties`,
  );
  return {
    ...schema,
    type: "object",
    properties: isObject(schema.properties) ? schema.properties : {},
  };
}

/** The record of one MCP tool: method POST, path /mcp/tools/<name>, risk from its annotations. */
function mcpRecord(t: {
  raw: JsonObject;
  schema: JsonObject;
  where: string;
  sink: DiagnosticSink;
}): ToolDefinition {
  const { raw, schema, where, sink } = t;
  const original = raw.name as string;
  const name = sanitizeName(original);
  if (name !== original)
    sink.add(
      "name.sanitized",
      `${where}/name`,
      `MCP tool ${JSON.stringify(original)} became ${name}`,
    );
  const r = mcpRisk(raw.annotations);
  if (!r.annotated) {
    sink.add(
      "mcp.unannotated",
      where,
      `tool ${original} has no readOnlyHint/destructiveHint; treated as destructive (risk high, confirmation required)`,
      "Ask the server to annotate the tool, or override it in a manual definition.",
    );
  }
  const annotations = isObject(raw.annotations) ? raw.annotations : {};
  const paramIn: Record<string, ParamLocation> = {};
  for (const k of Object.keys(schema.properties as JsonObject)) paramIn[k] = "body";
  const description = pickDescription(
    [raw.description, annotations.title, raw.title],
    `MCP tool ${original}`,
    where,
    sink,
  );
  return {
    schemaVersion: TOOL_SCHEMA_VERSION,
    name,
    source: "mcp",
    method: MCP_METHOD,
    path: mcpToolPath(original),
    description,
    scope: "mcp",
    risk: r.risk,
    confirmRequired: r.risk === "high",
    rateLimitPerMin: 0,
    requiresSubject: false,
    sensitive: false,
    readonly: r.readonly,
    idempotent: r.idempotent,
    timeoutMs: DEFAULT_TIMEOUT_MS,
    confirmPrompt: r.risk === "high" ? `Confirm MCP tool ${original}`.slice(0, 200) : "",
    context: buildContext([], where, sink),
    extensions: {
      "x-service-mcp": { tool: original, openWorld: annotations.openWorldHint !== false },
    },
    inputSchema: schema as ToolDefinition["inputSchema"],
    paramIn,
  };
}

/** MCP tools/list results, from a file or a live server (see live.ts). */
export const mcpSource: ToolSource = {
  kind: "mcp",
  detect: (doc) => mcpToolList(doc) !== undefined,
  plan: (input, ctx) => planMcpTools(input.doc as Json, input.label, ctx),
};
