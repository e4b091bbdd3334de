import { isObject, type JsonObject } from "../../schema-merge.ts";

/** RFC 6901 unescaping of one reference token. */
export function unescapeToken(t: string): string {
  return t.replaceAll("~1", "/").replaceAll("~0", "~");
}

/** Resolves a JSON pointer (without "#") inside a value; undefined when it leads nowhere. */
export function resolvePointer(root: unknown, ptr: string): unknown {
  if (ptr === "" || ptr === "/") return ptr === "" ? root : isObject(root) ? root[""] : undefined;
  if (!ptr.startsWith("/")) return undefined;
  let cur: unknown = root;
  for (const raw of ptr.slice(1).split("/")) {
    let token: string;
    try {
      token = decodeURIComponent(unescapeToken(raw));
    } catch {
      token = unescapeToken(raw);
    }
    if (Array.isArray(cur)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return undefined;
      cur = cur[Number(token)];
    } else if (isObject(cur)) {
      if (!Object.hasOwn(cur, token)) return undefined;
      cur = cur[token];
    } else return undefined;
  }
  return cur;
}

/**
 * Rewrites OpenAPI 3.0 / Swagger 2.0 schema dialect into JSON Schema 2020-12 where the meaning
 * is plain: nullable, Swagger's `type: file`, and 3.0 boolean exclusive bounds.
 */
export function normaliseOpenApiSchema(s: JsonObject): JsonObject {
  let out = s;
  if (out.type === "file") out = { ...out, type: "string", format: "binary" };
  if (out.nullable === true && typeof out.type === "string") {
    const { nullable: _n, ...rest } = out;
    out = { ...rest, type: [out.type, "null"] };
  }
  if (typeof out.exclusiveMinimum === "boolean") {
    const { exclusiveMinimum, ...rest } = out;
    out =
      exclusiveMinimum && typeof rest.minimum === "number"
        ? { ...rest, exclusiveMinimum: rest.minimum }
        : rest;
    if (exclusiveMinimum) delete out.minimum;
  }
  if (typeof out.exclusiveMaximum === "boolean") {
    const { exclusiveMaximum, ...rest } = out;
    out =
      exclusiveMaximum && typeof rest.maximum === "number"
        ? { ...rest, exclusiveMaximum: rest.maximum }
        : rest;
    if (exclusiveMaximum) delete out.maximum;
  }
  return out;
}
