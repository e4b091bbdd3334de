import { basename, dirname, extname, isAbsolute, resolve as resolvePath } from "node:path";
import { type DiagnosticSink, escapePointerToken } from "../../diagnostics.ts";
import {
  checkSchema,
  SCHEMA_ARRAY_KEYWORDS,
  SCHEMA_KEYWORDS,
  SCHEMA_MAP_KEYWORDS,
} from "../../json-schema.ts";
import { isObject, type Json, type JsonObject, mergeAllOf } from "../../schema-merge.ts";
import type { ReadDocument } from "../types.ts";
import { normaliseOpenApiSchema, resolvePointer, unescapeToken } from "./pointer.ts";

/** The deepest nesting followed inside one schema; deeper parts become {} with a warning. */
export const MAX_SCHEMA_DEPTH = 200;

/** One referenced schema, converted once per document and shared by every tool that reaches it. */
interface Def {
  readonly key: string;
  readonly name: string;
  /** Where the schema is, as `label#pointer`, for diagnostics. */
  readonly at: string;
  readonly docId: string;
  readonly source: Json;
  /** The converted schema (after conversion). */
  schema?: Json;
  /** Keys of the definitions this one refers to directly. */
  needs?: Set<string>;
}

/**
 * Where a schema node is, as `label#pointer`, built lazily: conversion passes a chain of tokens
 * down and renders it only when a diagnostic needs it.
 */
export type Place = string | { readonly up: Place; readonly token: string | number };

export function renderPlace(place: Place): string {
  const tokens: (string | number)[] = [];
  let cur = place;
  while (typeof cur !== "string") {
    tokens.push(cur.token);
    cur = cur.up;
  }
  return `${cur}${tokens
    .reverse()
    .map((t) => `/${escapePointerToken(t)}`)
    .join("")}`;
}

/** The place of a node given by pointer tokens in a labelled document. */
export function placeAt(label: string, tokens: readonly (string | number)[]): Place {
  return tokens.reduce<Place>((up, token) => ({ up, token }), `${label}#`);
}

interface Walk {
  docId: string;
  needs: Set<string>;
  depth: number;
}

/**
 * Converts the schemas of one OpenAPI document to JSON Schema 2020-12 with references kept as
 * references: every `$ref` becomes `{"$ref": "#/$defs/<Name>"}`, each referenced schema is
 * converted once per document, and a tool's inputSchema carries under `$defs` exactly the
 * definitions its inputs reach. Recursion needs nothing special: a definition refers to itself
 * by name. Remote refs are never fetched; relative-file refs are read through `readDocument`.
 */
export class SchemaDefs {
  private readonly docs = new Map<string, Json>();
  private readonly defs = new Map<string, Def>();
  private readonly byName = new Map<string, Def>();
  private readonly reported = new Set<string>();
  /** Converted parameter schemas by parameter object: a shared parameter is converted once. */
  readonly parameterSchemas = new WeakMap<object, Json>();
  /** `label#pointer` of the operation being built, for problems found outside definitions. */
  currentPath = "#";

  constructor(
    private readonly rootId: string,
    private readonly label: string,
    root: Json,
    private readonly sink: DiagnosticSink,
    private readonly readDocument?: ReadDocument,
  ) {
    this.docs.set(rootId, root);
  }

  private report(
    code: Parameters<DiagnosticSink["add"]>[0],
    place: Place,
    message: string,
    suggestion?: string,
  ): void {
    const at = renderPlace(place);
    const key = `${at}\u0000${code}\u0000${message}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.sink.add(code, at, message, suggestion);
  }

  /** The label diagnostics use for a document: the input's label, or the file relative to it. */
  private labelOf(docId: string): string {
    if (docId === this.rootId) return this.label;
    return isAbsolute(this.rootId)
      ? resolvePath(docId).replace(`${dirname(this.rootId)}/`, "")
      : docId;
  }

  private loadDoc(id: string): Json | undefined {
    if (this.docs.has(id)) return this.docs.get(id);
    const doc = this.readDocument?.(id) as Json | undefined;
    if (doc !== undefined) this.docs.set(id, doc);
    return doc;
  }

  /** Resolves a $ref string seen in document `docId`; undefined (reported at `at`) when impossible. */
  private locate(
    ref: string,
    docId: string,
    at: Place,
  ): { key: string; docId: string; ptr: string; value: Json } | undefined {
    if (/^[a-z][a-z0-9+.-]*:/i.test(ref)) {
      this.report(
        "ref.remote_refused",
        at,
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
        this.report(
          "ref.file_unreadable",
          at,
          `$ref ${ref} names a file, but this input was not read from disk`,
        );
        return undefined;
      }
      targetId = resolvePath(dirname(docId), filePart);
    }
    const doc = this.loadDoc(targetId);
    if (doc === undefined) {
      this.report(
        "ref.file_unreadable",
        at,
        `$ref ${ref}: file ${filePart} could not be read or parsed`,
      );
      return undefined;
    }
    const value = resolvePointer(doc, ptr);
    if (value === undefined) {
      this.report(
        "ref.unresolved",
        at,
        `$ref ${ref} points to nothing`,
        "Fix the reference or add the component.",
      );
      return undefined;
    }
    return { key: `${targetId}#${ptr}`, docId: targetId, ptr, value: value as Json };
  }

  /** A stable, readable $defs name: the component name, else the pointer's tokens joined by dots. */
  private defName(docId: string, ptr: string): string {
    const tokens = ptr.split("/").slice(1).map(unescapeToken);
    const component =
      (tokens.length === 3 && tokens[0] === "components" && tokens[1] === "schemas") ||
      (tokens.length === 2 && tokens[0] === "definitions");
    let stem = component ? (tokens.at(-1) as string) : tokens.join(".");
    if (docId !== this.rootId) stem = `${basename(docId, extname(docId))}.${stem}`;
    stem = stem.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 120) || "Schema";
    let name = stem;
    for (let i = 2; this.byName.has(name); i++) name = `${stem}_${i}`;
    return name;
  }

  /** The definition a $ref names (created on first sight, converted when first needed). */
  private defFor(ref: string, docId: string, at: Place): Def | undefined {
    const loc = this.locate(ref, docId, at);
    if (!loc) return undefined;
    const known = this.defs.get(loc.key);
    if (known) return known;
    const name = this.defName(loc.docId, loc.ptr);
    const at2 = `${this.labelOf(loc.docId)}#${loc.ptr}`;
    const def: Def = { key: loc.key, name, at: at2, docId: loc.docId, source: loc.value };
    this.defs.set(loc.key, def);
    this.byName.set(name, def);
    return def;
  }

  /** Converts a definition's schema once; a $ref chain that loops back without a schema becomes {}. */
  private converted(def: Def): Def & { schema: Json; needs: Set<string> } {
    if (def.schema !== undefined && def.needs)
      return def as Def & { schema: Json; needs: Set<string> };
    const needs = new Set<string>();
    def.needs = needs;
    def.schema = {};
    if (this.aliasLoops(def)) {
      this.report(
        "ref.unresolved",
        def.at,
        "this $ref chain loops back to itself without a schema; it accepts any value",
      );
    } else {
      const raw = this.convertNode(def.source, def.at, { docId: def.docId, needs, depth: 0 });
      const [label, ptr] = [
        def.at.slice(0, def.at.indexOf("#")),
        def.at.slice(def.at.indexOf("#") + 1),
      ];
      const tokens = ptr === "" ? [] : ptr.slice(1).split("/").map(unescapeToken);
      def.schema = checkSchema(raw, { label, pointer: tokens, sink: this.sink });
    }
    return def as Def & { schema: Json; needs: Set<string> };
  }

  /** True when a definition is only a $ref whose chain comes back to it. */
  private aliasLoops(def: Def): boolean {
    const seen = new Set([def.key]);
    let cur: Json = def.source;
    let docId = def.docId;
    for (let i = 0; i < 32; i++) {
      if (!isObject(cur) || typeof cur.$ref !== "string" || Object.keys(cur).length !== 1)
        return false;
      const loc = this.locate(cur.$ref, docId, def.at);
      if (!loc) return false;
      if (seen.has(loc.key)) return true;
      seen.add(loc.key);
      cur = loc.value;
      docId = loc.docId;
    }
    return true;
  }

  private convertRef(obj: JsonObject, at: Place, w: Walk): Json {
    const def = this.defFor(obj.$ref as string, w.docId, { up: at, token: "$ref" });
    const out: JsonObject = {};
    if (def) {
      w.needs.add(def.key);
      out.$ref = `#/$defs/${def.name}`;
    }
    for (const [k, v] of Object.entries(obj))
      if (k !== "$ref") out[k] = this.convertKeyword(k, v, { up: at, token: k }, w);
    return out;
  }

  private convertKeyword(k: string, v: Json, at: Place, w: Walk): Json {
    if (SCHEMA_KEYWORDS.has(k)) return this.convertNode(v, at, w);
    if (SCHEMA_MAP_KEYWORDS.has(k) && isObject(v)) {
      const out: JsonObject = {};
      for (const [name, s] of Object.entries(v))
        out[name] = this.convertNode(s, { up: at, token: name }, w);
      return out;
    }
    if (SCHEMA_ARRAY_KEYWORDS.has(k) && Array.isArray(v))
      return v.map((s, i) => this.convertNode(s, { up: at, token: i }, w));
    return v;
  }

  /** Converts one schema node: refs kept as $defs references, OpenAPI dialect normalised. */
  private convertNode(node: Json, at: Place, w: Walk): Json {
    if (!isObject(node)) return node;
    if (w.depth >= MAX_SCHEMA_DEPTH) {
      this.report(
        "schema.too_deep",
        at,
        `schema nests deeper than ${MAX_SCHEMA_DEPTH} levels; the rest accepts any value`,
      );
      return {};
    }
    w.depth++;
    try {
      if (typeof node.$ref === "string") return this.convertRef(node, at, w);
      let out: JsonObject = {};
      for (const [k, v] of Object.entries(node))
        out[k] = this.convertKeyword(k, v, { up: at, token: k }, w);
      out = normaliseOpenApiSchema(out);
      if (Array.isArray(out.allOf)) {
        const merged = mergeAllOf(out);
        if (merged) out = merged;
        else if (out.allOf.every((m) => isObject(m) && !("$ref" in m)))
          this.report(
            "schema.allof_kept",
            at,
            "allOf members could not be merged safely; allOf was kept",
          );
      }
      return out;
    } finally {
      w.depth--;
    }
  }

  /** Converts a schema at its place of use in the current operation (`ptr` locates it). */
  expand(schema: Json, at: Place = this.currentPath): Json {
    return this.convertNode(schema, at, { docId: this.rootId, needs: new Set(), depth: 0 });
  }

  /**
   * The schema a request body's properties are read from: a root `$ref` (or allOf of refs and
   * plain members) resolved to the definitions, so an object body still spreads into inputs.
   */
  bodyRoot(schema: Json, hops = 0): Json {
    if (!isObject(schema) || hops > 32) return schema;
    if (
      typeof schema.$ref === "string" &&
      Object.keys(schema).every((k) => k === "$ref" || k === "description")
    ) {
      const def = this.byName.get(schema.$ref.slice("#/$defs/".length));
      return def ? this.bodyRoot(this.converted(def).schema, hops + 1) : schema;
    }
    if (!Array.isArray(schema.allOf) || !schema.allOf.some((m) => isObject(m) && "$ref" in m))
      return schema;
    const members = schema.allOf.map((m) => this.bodyRoot(m, hops + 1));
    return mergeAllOf({ ...schema, allOf: members }) ?? schema;
  }

  /** The `$defs` a tool's root schema reaches, transitively, sorted by name. */
  toolDefs(root: Json): Record<string, Json> {
    const queue: Def[] = [];
    const seen = new Set<string>();
    // Walks schema keywords only: data (enum, default, examples) holds no references.
    const visit = (node: Json) => {
      if (!isObject(node)) return;
      for (const [k, v] of Object.entries(node)) {
        if (k === "$ref" && typeof v === "string" && v.startsWith("#/$defs/")) {
          const def = this.byName.get(v.slice("#/$defs/".length));
          if (def && !seen.has(def.key)) {
            seen.add(def.key);
            queue.push(def);
          }
        } else if (SCHEMA_KEYWORDS.has(k)) visit(v);
        else if (SCHEMA_MAP_KEYWORDS.has(k) && isObject(v))
          for (const x of Object.values(v)) visit(x);
        else if (SCHEMA_ARRAY_KEYWORDS.has(k) && Array.isArray(v)) for (const x of v) visit(x);
      }
    };
    visit(root);
    const found: Def[] = [];
    for (let i = 0; i < queue.length; i++) {
      const def = this.converted(queue[i] as Def);
      found.push(def);
      for (const key of def.needs) {
        if (seen.has(key)) continue;
        seen.add(key);
        queue.push(this.defs.get(key) as Def);
      }
    }
    found.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const out: Record<string, Json> = {};
    for (const d of found) out[d.name] = d.schema as Json;
    return out;
  }

  /** Follows $ref chains on non-schema objects (parameters, request bodies, path items); bounded. */
  deref(node: Json, docId = this.rootId): { value: Json; docId: string } | undefined {
    let cur: Json = node;
    let curDoc = docId;
    for (let i = 0; i < 32; i++) {
      if (!isObject(cur) || typeof cur.$ref !== "string") return { value: cur, docId: curDoc };
      const loc = this.locate(cur.$ref, curDoc, this.currentPath);
      if (!loc) return undefined;
      cur = loc.value;
      curDoc = loc.docId;
    }
    this.report(
      "ref.unresolved",
      this.currentPath,
      "a $ref chain does not end (more than 32 links)",
    );
    return undefined;
  }
}
