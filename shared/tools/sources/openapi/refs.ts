import { dirname, isAbsolute, resolve as resolvePath } from "node:path";
import type { DiagnosticSink } from "../../diagnostics.ts";
import { isObject, type Json, type JsonObject, mergeAllOf } from "../../schema-merge.ts";
import type { ReadDocument } from "../types.ts";

/** Keywords whose values are data, not schemas: a "$ref" inside them is not a reference. */
const DATA_KEYWORDS = new Set(["example", "examples", "default", "const", "enum", "x-examples"]);

/** The deepest nesting the expander follows; deeper parts become {} with a warning. */
export const MAX_SCHEMA_DEPTH = 200;

function unescapeToken(t: string): string {
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

interface Expanded {
  schema: Json;
  /** Keys of recursive references this value points at through $defs. */
  needs: Set<string>;
  /** True when something was cut for depth, so the value must not be reused elsewhere. */
  truncated: boolean;
}

/**
 * Inlines $refs in request schemas. Recursive references cannot be inlined, so the reference
 * that closes a cycle becomes `{"$ref": "#/$defs/Name"}` and the tool's inputSchema carries
 * the definition. Results are memoised per reference, which keeps large descriptions
 * (GitHub's, ~1,200 operations) fast, and a depth bound keeps hostile input from overflowing
 * the stack.
 */
export class SchemaExpander {
  private readonly docs = new Map<string, Json>();
  private readonly memo = new Map<string, Expanded>();
  private readonly onStack = new Set<string>();
  private readonly recursive = new Set<string>();
  private readonly defs = new Map<string, Expanded>();
  private readonly defNames = new Map<string, string>();
  private readonly usedDefNames = new Set<string>();
  private readonly reported = new Set<string>();
  private depth = 0;
  /** Path used for diagnostics while expanding one operation. */
  currentPath = "#";

  constructor(
    private readonly rootId: string,
    root: Json,
    private readonly sink: DiagnosticSink,
    private readonly readDocument?: ReadDocument,
  ) {
    this.docs.set(rootId, root);
  }

  private reportOnce(
    code: Parameters<DiagnosticSink["add"]>[0],
    message: string,
    suggestion?: string,
  ) {
    const key = `${this.currentPath}\u0000${code}\u0000${message}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.sink.add(code, this.currentPath, message, suggestion);
  }

  private defName(key: string): string {
    const known = this.defNames.get(key);
    if (known) return known;
    const ptr = key.slice(key.indexOf("#") + 1);
    const last = unescapeToken(ptr.split("/").pop() ?? "") || "Schema";
    const stem = last.replace(/[^A-Za-z0-9_.-]/g, "_") || "Schema";
    let name = stem;
    for (let i = 2; this.usedDefNames.has(name); i++) name = `${stem}_${i}`;
    this.usedDefNames.add(name);
    this.defNames.set(key, name);
    return name;
  }

  private loadDoc(id: string): Json | undefined {
    if (this.docs.has(id)) return this.docs.get(id);
    const doc = this.readDocument?.(id) as Json | undefined;
    if (doc !== undefined) this.docs.set(id, doc);
    return doc;
  }

  /** Resolves a $ref string seen in document `docId`; undefined (reported) when impossible. */
  private locate(
    ref: string,
    docId: string,
  ): { key: string; docId: string; value: Json } | undefined {
    if (/^[a-z][a-z0-9+.-]*:/i.test(ref)) {
      this.reportOnce(
        "ref.remote_refused",
        `remote $ref ${ref} was not fetched; compilation never reaches the network`,
        "Bundle the referenced schema into the document, or refer to a local file.",
      );
      return undefined;
    }
    const hash = ref.indexOf("#");
    const filePart = hash === -1 ? ref : ref.slice(0, hash);
    const ptr = hash === -1 ? "" : ref.slice(hash + 1);
    let targetId = docId;
    if (filePart !== "") {
      if (!this.readDocument || !isAbsolute(docId)) {
        this.reportOnce(
          "ref.file_unreadable",
          `$ref ${ref} names a file, but this input was not read from disk`,
        );
        return undefined;
      }
      targetId = resolvePath(dirname(docId), filePart);
    }
    const doc = this.loadDoc(targetId);
    if (doc === undefined) {
      this.reportOnce(
        "ref.file_unreadable",
        `$ref ${ref}: file ${filePart} could not be read or parsed`,
      );
      return undefined;
    }
    const value = resolvePointer(doc, ptr);
    if (value === undefined) {
      this.reportOnce(
        "ref.unresolved",
        `$ref ${ref} points to nothing`,
        "Fix the reference or add the component.",
      );
      return undefined;
    }
    return { key: `${targetId}#${ptr}`, docId: targetId, value: value as Json };
  }

  private expandRef(ref: string, docId: string): Expanded {
    const loc = this.locate(ref, docId);
    if (!loc) return { schema: {}, needs: new Set(), truncated: false };
    const cached = this.memo.get(loc.key);
    if (cached) return cached;
    if (this.onStack.has(loc.key)) {
      this.recursive.add(loc.key);
      const name = this.defName(loc.key);
      return { schema: { $ref: `#/$defs/${name}` }, needs: new Set([loc.key]), truncated: false };
    }
    this.onStack.add(loc.key);
    const inner = this.expandNode(loc.value, loc.docId);
    this.onStack.delete(loc.key);
    let result = inner;
    if (this.recursive.has(loc.key)) {
      this.defs.set(loc.key, inner);
      const name = this.defName(loc.key);
      this.reportOnce("ref.recursive", `recursive schema ${name} is kept in $defs`);
      result = {
        schema: { $ref: `#/$defs/${name}` },
        needs: new Set([loc.key]),
        truncated: inner.truncated,
      };
    }
    if (!result.truncated) this.memo.set(loc.key, result);
    return result;
  }

  private expandNode(node: Json, docId: string): Expanded {
    if (node === null || typeof node !== "object")
      return { schema: node, needs: new Set(), truncated: false };
    if (this.depth >= MAX_SCHEMA_DEPTH) {
      this.reportOnce(
        "schema.too_deep",
        `schema nests deeper than ${MAX_SCHEMA_DEPTH} levels; the rest accepts any value`,
      );
      return { schema: {}, needs: new Set(), truncated: true };
    }
    this.depth++;
    try {
      const needs = new Set<string>();
      let truncated = false;
      const take = (e: Expanded) => {
        for (const n of e.needs) needs.add(n);
        truncated ||= e.truncated;
        return e.schema;
      };
      if (Array.isArray(node))
        return { schema: node.map((n) => take(this.expandNode(n, docId))), needs, truncated };
      const obj = node as JsonObject;
      if (typeof obj.$ref === "string") {
        const target = take(this.expandRef(obj.$ref, docId));
        const siblings = Object.keys(obj).filter((k) => k !== "$ref");
        if (siblings.length === 0) return { schema: target, needs, truncated };
        const out: JsonObject = isObject(target) ? { ...target } : {};
        for (const k of siblings)
          out[k] = DATA_KEYWORDS.has(k)
            ? (obj[k] as Json)
            : take(this.expandNode(obj[k] as Json, docId));
        return { schema: out, needs, truncated };
      }
      let out: JsonObject = {};
      for (const [k, v] of Object.entries(obj)) {
        out[k] = DATA_KEYWORDS.has(k) || k.startsWith("x-") ? v : take(this.expandNode(v, docId));
      }
      out = normaliseOpenApiSchema(out);
      if (Array.isArray(out.allOf)) {
        const merged = mergeAllOf(out);
        if (merged) out = merged;
        else
          this.reportOnce(
            "schema.allof_kept",
            "allOf members could not be merged safely; allOf was kept",
          );
      }
      return { schema: out, needs, truncated };
    } finally {
      this.depth--;
    }
  }

  private toolNeeds = new Set<string>();

  /** Starts collecting the $defs needed by one tool's schemas. */
  beginTool(): void {
    this.toolNeeds = new Set();
  }

  /** Expands one schema for the current tool; recursive parts become $defs references. */
  expand(schema: Json, docId = this.rootId): Json {
    this.depth = 0;
    const e = this.expandNode(schema, docId);
    for (const n of e.needs) this.toolNeeds.add(n);
    return e.schema;
  }

  /** The $defs the current tool needs, transitively, keyed by definition name. */
  toolDefs(): Record<string, Json> {
    const defs: Record<string, Json> = {};
    const queue = [...this.toolNeeds];
    const seen = new Set<string>();
    while (queue.length > 0) {
      const key = queue.shift() as string;
      if (seen.has(key)) continue;
      seen.add(key);
      const def = this.defs.get(key);
      defs[this.defName(key)] = def ? def.schema : {};
      if (def) for (const n of def.needs) queue.push(n);
    }
    const sorted: Record<string, Json> = {};
    for (const k of Object.keys(defs).sort()) sorted[k] = defs[k] as Json;
    return sorted;
  }

  /** The schema a request body's properties are read from. */
  bodyRoot(schema: Json): Json {
    return schema;
  }

  /** Follows $ref chains on non-schema objects (parameters, request bodies); bounded. */
  deref(node: Json, docId = this.rootId): { value: Json; docId: string } | undefined {
    let cur: Json = node;
    let curDoc = docId;
    for (let i = 0; i < 32; i++) {
      if (!isObject(cur) || typeof cur.$ref !== "string") return { value: cur, docId: curDoc };
      const loc = this.locate(cur.$ref, curDoc);
      if (!loc) return undefined;
      cur = loc.value;
      curDoc = loc.docId;
    }
    this.reportOnce("ref.unresolved", "a $ref chain does not end (more than 32 links)");
    return undefined;
  }
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
