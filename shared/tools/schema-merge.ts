/** JSON values as the compiler sees them after parsing. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Deep JSON equality; key order does not matter. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao);
  if (ak.length !== Object.keys(bo).length) return false;
  return ak.every((k) => Object.hasOwn(bo, k) && deepEqual(ao[k], bo[k]));
}

/**
 * Merges `allOf` members into one object schema when that cannot change meaning: members are
 * plain schemas (no $ref, no nested combinators), property schemas that appear twice are
 * equal, and every other keyword agrees. Returns undefined when the merge is not safe, so the
 * caller keeps allOf as it is (JSON Schema evaluates it correctly either way).
 */
export function mergeAllOf(schema: JsonObject): JsonObject | undefined {
  const members = schema.allOf;
  if (!Array.isArray(members) || members.length === 0) return undefined;
  const { allOf: _ignored, ...rest } = schema;
  const parts: JsonObject[] = [rest];
  for (const m of members) {
    if (!isObject(m)) return undefined;
    if ("$ref" in m || "oneOf" in m || "anyOf" in m || "not" in m || "if" in m) return undefined;
    if (Array.isArray(m.allOf)) {
      const inner = mergeAllOf(m);
      if (!inner) return undefined;
      parts.push(inner);
    } else parts.push(m);
  }
  const out: JsonObject = {};
  const properties: JsonObject = {};
  const required: string[] = [];
  let hasProps = false;
  for (const p of parts) {
    for (const [k, v] of Object.entries(p)) {
      if (k === "properties") {
        if (!isObject(v)) return undefined;
        hasProps = true;
        for (const [pk, pv] of Object.entries(v)) {
          if (Object.hasOwn(properties, pk) && !deepEqual(properties[pk], pv)) return undefined;
          properties[pk] = pv;
        }
      } else if (k === "required") {
        if (!Array.isArray(v)) return undefined;
        for (const r of v) if (typeof r === "string" && !required.includes(r)) required.push(r);
      } else if (k === "description" || k === "title" || k === "example" || k === "examples") {
        // Annotations: the first one wins; they never change what validates.
        if (!(k in out)) out[k] = v;
      } else if (Object.hasOwn(out, k)) {
        if (!deepEqual(out[k], v)) return undefined;
      } else out[k] = v;
    }
  }
  if (hasProps) out.properties = properties;
  if (required.length > 0) out.required = required;
  if (hasProps && !("type" in out)) out.type = "object";
  return out;
}
