import { checkSchema } from "../../json-schema.ts";
import { isObject, type Json, type JsonObject } from "../../schema-merge.ts";
import type { ParamLocation, ToolDefinition } from "../../schemas.ts";
import type { OperationContext } from "./operation.ts";

/** One input of a tool before names are made unique. */
export interface Entry {
  /** Name on the wire (parameter name or body property). */
  wire: string;
  /** Name in inputSchema.properties. */
  name: string;
  in: ParamLocation;
  schema: Json;
  required: boolean;
  /** Pointer of the schema in the source document, for diagnostics. */
  source: (string | number)[];
}

const PROPERTY_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Rewrites names model APIs refuse (outside [A-Za-z0-9_.-]{1,64}). */
function sanitizeNames(c: OperationContext): void {
  for (const e of c.entries) {
    if (PROPERTY_NAME.test(e.name)) continue;
    const fixed = (e.name.replace(/[^A-Za-z0-9_.-]/g, "_") || "_").slice(0, 64);
    c.d.sink.add(
      "param.name_sanitized",
      c.where,
      `${e.in} input ${JSON.stringify(e.wire)} is exposed as ${fixed}`,
    );
    e.name = fixed;
  }
}

/**
 * Names that clash across locations are all renamed `<name>__<in>`, so no input silently wins
 * over another; the wire name is kept.
 */
function renameClashes(c: OperationContext): void {
  const byName = new Map<string, Entry[]>();
  for (const e of c.entries) {
    const list = byName.get(e.name);
    if (list) list.push(e);
    else byName.set(e.name, [e]);
  }
  const taken = new Set(c.entries.map((e) => e.name));
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
    c.d.sink.add(
      "param.renamed",
      c.where,
      `inputs named ${JSON.stringify(name)} clash: ${renamed.join(", ")}`,
      "Rename one of them in the description, e.g. with an overlay.",
    );
  }
}

/** Property schemas known to pass the meta-schema (shared ones are checked once). */
const validSchemas = new WeakSet<object>();

/**
 * Checks each property schema against the JSON Schema 2020-12 meta-schema; an invalid one is
 * repaired and reported at its pointer in the source. The object around them is built here and
 * always valid, and $defs entries were checked when converted, so this covers the whole schema.
 */
function checkProperties(
  c: OperationContext,
  properties: JsonObject,
  sources: Map<string, (string | number)[]>,
): void {
  for (const [name, schema] of Object.entries(properties)) {
    if (isObject(schema) && validSchemas.has(schema)) continue;
    const place = { label: c.d.label, sink: c.d.sink, pointer: sources.get(name) ?? c.opPtr };
    const checked = checkSchema(schema, place);
    if (checked !== schema) properties[name] = checked;
    else if (isObject(schema)) validSchemas.add(schema);
  }
}

/**
 * Input schema step: every input in one flat object, its $defs, and the check against the JSON
 * Schema 2020-12 meta-schema (an invalid source schema is repaired and reported at its pointer).
 */
export function inputSchemaStep(c: OperationContext): {
  inputSchema: ToolDefinition["inputSchema"];
  paramIn: Record<string, ParamLocation>;
  wireNames: Record<string, { in: ParamLocation; name: string }>;
} {
  sanitizeNames(c);
  renameClashes(c);
  const properties: JsonObject = {};
  const required: string[] = [];
  const paramIn: Record<string, ParamLocation> = {};
  const wireNames: Record<string, { in: ParamLocation; name: string }> = {};
  const sources = new Map<string, (string | number)[]>();
  for (const e of c.entries) {
    properties[e.name] = e.schema;
    paramIn[e.name] = e.in;
    sources.set(e.name, e.source);
    if (e.required && !required.includes(e.name)) required.push(e.name);
    if (e.name !== e.wire) wireNames[e.name] = { in: e.in, name: e.wire };
  }
  checkProperties(c, properties, sources);
  const root: JsonObject = { type: "object", properties };
  if (required.length > 0) root.required = required;
  root.additionalProperties = false;
  const defs = c.d.schemas.toolDefs(root);
  const inputSchema = root as ToolDefinition["inputSchema"];
  if (Object.keys(defs).length > 0) inputSchema.$defs = defs;
  return { inputSchema, paramIn, wireNames };
}
