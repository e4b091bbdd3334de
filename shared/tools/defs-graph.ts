import { SCHEMA_ARRAY_KEYWORDS, SCHEMA_KEYWORDS, SCHEMA_MAP_KEYWORDS } from "./json-schema.ts";
import { isObject, type Json, type JsonObject } from "./schema-merge.ts";

/** Size and outgoing references of one `$defs` entry, computed once per shared schema object. */
export interface DefInfo {
  /** UTF-8 bytes of the compact JSON. */
  bytes: number;
  /** Names this definition refers to (`#/$defs/<name>`). */
  refs: string[];
  /** The definition without annotations (see leanSchema), and its size. */
  lean: Json;
  leanBytes: number;
  /** Bytes of the stub that replaces it when it is omitted (see budget.ts). */
  stubBytes: number;
}

const DEFS_PREFIX = "#/$defs/";

/** Text that stands in for a definition left out to fit the tool budget. */
export const STUB_TEXT = "Schema omitted to fit the tool size budget.";

/** Annotations a model can do without when a tool is over budget (validation is unchanged). */
const ANNOTATIONS = new Set([
  "description",
  "title",
  "examples",
  "example",
  "externalDocs",
  "deprecated",
  "xml",
  "$comment",
]);

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "");
}

/** Names of `#/$defs/…` references anywhere in a value. */
export function refNames(node: Json, out: Set<string> = new Set()): Set<string> {
  if (Array.isArray(node)) for (const n of node) refNames(n, out);
  else if (isObject(node)) {
    for (const [k, v] of Object.entries(node)) {
      if (k === "$ref" && typeof v === "string" && v.startsWith(DEFS_PREFIX))
        out.add(v.slice(DEFS_PREFIX.length));
      else refNames(v, out);
    }
  }
  return out;
}

/**
 * A schema without annotations (description, title, examples, example, externalDocs, deprecated,
 * xml, $comment) and without x- keys, at every level of nested schemas. Data is copied as is.
 */
export function leanSchema(node: Json): Json {
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(node)) {
    if (ANNOTATIONS.has(k) || k.startsWith("x-")) continue;
    if (SCHEMA_KEYWORDS.has(k)) out[k] = leanSchema(v);
    else if (SCHEMA_MAP_KEYWORDS.has(k) && isObject(v)) {
      const map: JsonObject = {};
      for (const [name, s] of Object.entries(v)) map[name] = leanSchema(s);
      out[k] = map;
    } else if (SCHEMA_ARRAY_KEYWORDS.has(k) && Array.isArray(v))
      out[k] = v.map((s) => leanSchema(s));
    else out[k] = v;
  }
  return out;
}

const infos = new WeakMap<object, DefInfo>();

/** DefInfo of a definition; shared definition objects are measured once per process. */
export function defInfo(def: Json): DefInfo {
  const key = isObject(def) ? def : undefined;
  const known = key ? infos.get(key) : undefined;
  if (known) return known;
  const lean = leanSchema(def);
  const info: DefInfo = {
    bytes: jsonBytes(def),
    refs: [...refNames(def)],
    lean,
    leanBytes: jsonBytes(lean),
    stubBytes: jsonBytes(stubFor(def, STUB_TEXT)),
  };
  if (key) infos.set(key, info);
  return info;
}

/**
 * Distance of each definition from the root schema: 1 for those the root refers to, 2 for those
 * they refer to, and so on. Definitions nothing reaches are absent.
 */
export function defDistances(root: Json, defs: Record<string, Json>): Map<string, number> {
  const dist = new Map<string, number>();
  let layer = [...refNames(root)].filter((n) => Object.hasOwn(defs, n));
  for (let d = 1; layer.length > 0; d++) {
    const next: string[] = [];
    for (const name of layer) {
      if (dist.has(name)) continue;
      dist.set(name, d);
      for (const r of defInfo(defs[name] as Json).refs)
        if (!dist.has(r) && Object.hasOwn(defs, r)) next.push(r);
    }
    layer = next;
  }
  return dist;
}

/** What stands in for an omitted definition: its type, when it has a simple one. */
export function stubFor(def: Json, why: string): JsonObject {
  const stub: JsonObject = {};
  if (isObject(def) && (typeof def.type === "string" || Array.isArray(def.type)))
    stub.type = def.type;
  stub.description = why;
  return stub;
}
