import Ajv2020, { type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import { type DiagnosticSink, docPath } from "./diagnostics.ts";
import { isObject, type Json, type JsonObject } from "./schema-merge.ts";

/** JSON Schema 2020-12's meta-schema, the dialect of every inputSchema the compiler emits. */
export const META_SCHEMA_ID = "https://json-schema.org/draft/2020-12/schema";

const ajv = new Ajv2020({ allErrors: true, strict: false });
let metaCheck: ValidateFunction | undefined;

/** Ajv's compiled 2020-12 meta-schema (Ajv2020 ships it). */
function metaValidator(): ValidateFunction {
  metaCheck ??= ajv.getSchema(META_SCHEMA_ID);
  if (!metaCheck) throw new Error("Ajv has no JSON Schema 2020-12 meta-schema");
  return metaCheck;
}

/** Whether a value is a valid JSON Schema 2020-12 schema; the errors when it is not. */
export function metaSchemaErrors(schema: unknown): ErrorObject[] {
  const check = metaValidator();
  return check(schema) ? [] : [...(check.errors ?? [])];
}

/** Keywords whose value is one schema, a map of schemas, or an array of schemas. */
export const SCHEMA_KEYWORDS = new Set([
  "items",
  "additionalItems",
  "additionalProperties",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contains",
  "not",
  "if",
  "then",
  "else",
  "propertyNames",
  "contentSchema",
]);
export const SCHEMA_MAP_KEYWORDS = new Set([
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas",
]);
export const SCHEMA_ARRAY_KEYWORDS = new Set(["allOf", "anyOf", "oneOf", "prefixItems"]);

function decodeToken(t: string): string {
  return t.replaceAll("~1", "/").replaceAll("~0", "~");
}

/**
 * Where to repair an error at `tokens` (an Ajv instancePath into the schema): the keyword whose
 * value is wrong (it is removed), or the subschema that is not a schema at all (it becomes {}).
 */
function repairTarget(tokens: string[]): { tokens: string[]; remove: boolean } {
  let kind: "schema" | "map" | "array" = "schema";
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as string;
    if (kind === "map" || kind === "array") kind = "schema";
    else if (SCHEMA_MAP_KEYWORDS.has(t)) kind = "map";
    else if (SCHEMA_ARRAY_KEYWORDS.has(t)) kind = "array";
    else if (!SCHEMA_KEYWORDS.has(t)) return { tokens: tokens.slice(0, i + 1), remove: true };
  }
  return { tokens, remove: false };
}

/** A copy of `root` with the value at `tokens` removed (or replaced by {}); copies only the path. */
function repaired(root: Json, tokens: string[], remove: boolean): Json {
  if (tokens.length === 0) return {};
  const [head, ...rest] = tokens as [string, ...string[]];
  if (Array.isArray(root)) {
    const i = Number(head);
    const copy = [...root];
    if (rest.length === 0 && remove) copy.splice(i, 1);
    else copy[i] = rest.length === 0 ? {} : repaired(copy[i] as Json, rest, remove);
    return copy;
  }
  if (!isObject(root)) return root;
  const copy: JsonObject = { ...root };
  if (rest.length === 0 && remove) delete copy[head];
  else copy[head] = rest.length === 0 ? {} : repaired(copy[head] as Json, rest, remove);
  return copy;
}

export interface SchemaCheckPlace {
  label: string;
  /** JSON pointer tokens of the schema in its source document, or a function of the error's tokens. */
  pointer: (string | number)[] | ((tokens: string[]) => (string | number)[]);
  sink: DiagnosticSink;
}

/**
 * Validates a schema against the JSON Schema 2020-12 meta-schema and repairs what is invalid:
 * a keyword with a wrong value is removed, a subschema that is not a schema becomes {} (so it
 * accepts any value), each with a `schema.invalid` warning at its JSON pointer in the source
 * (one per pointer and sink, however many places the schema is checked from).
 * The result always passes the meta-schema; a valid schema is returned as it is (same object).
 */
export function checkSchema(schema: Json, place: SchemaCheckPlace): Json {
  let current = schema;
  for (let round = 0; round < 8; round++) {
    const errors = metaSchemaErrors(current);
    if (errors.length === 0) return current;
    const seen = new Set<string>();
    for (const e of errors) {
      const tokens =
        e.instancePath === "" ? [] : e.instancePath.slice(1).split("/").map(decodeToken);
      const target = repairTarget(tokens);
      const key = target.tokens.join("/");
      if (seen.has(key) || [...seen].some((s) => key.startsWith(`${s}/`))) continue;
      seen.add(key);
      const base =
        typeof place.pointer === "function" ? place.pointer(tokens) : [...place.pointer, ...tokens];
      // The message names the keyword, not Ajv's path inside this schema: the diagnostic's path
      // already locates it, and the same source schema is checked both inside its parent's
      // definition and as a definition of its own (codat's Item/definitions/itemType).
      place.sink.addOnce(
        "schema.invalid",
        docPath(place.label, base),
        `${target.tokens.at(-1) ?? "schema"} ${e.message ?? "is invalid"} (JSON Schema 2020-12); ${
          target.remove ? `keyword ${target.tokens.at(-1)} removed` : "replaced by {} (any value)"
        }`,
        "Fix the schema in the description, e.g. with an overlay.",
      );
      current = repaired(current, target.tokens, target.remove);
    }
  }
  return metaSchemaErrors(current).length === 0 ? current : {};
}

/**
 * checkSchema for a whole inputSchema: the result stays an object schema with `properties`, as
 * the tool-definition record requires.
 */
export function checkInputSchema(schema: Json, place: SchemaCheckPlace): JsonObject {
  const checked = checkSchema(schema, place);
  if (isObject(checked) && checked.type === "object" && isObject(checked.properties))
    return checked;
  return { ...(isObject(checked) ? checked : {}), type: "object", properties: {} };
}
