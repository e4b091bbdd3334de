import Ajv2020, { type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsImport from "ajv-formats";
import { JSONPathError, type JSONValue, query } from "json-p3";
import { type DiagnosticSink, docPath } from "../../diagnostics.ts";
import { isObject, type Json, type JsonObject } from "../../schema-merge.ts";

/**
 * JSON Schema (2020-12) for Overlay documents, written from the Overlay 1.0.0 specification
 * (Overlay, Info and Action objects; `^x-` extensions everywhere) and extended with 1.1's
 * `copy`. Unknown fields are refused; actions must be a non-empty list of distinct items.
 */
export function overlaySchema(minor: "0" | "1"): JsonObject {
  const ext = { "^x-": true };
  const action: JsonObject = {
    type: "object",
    properties: {
      target: { type: "string", pattern: "^\\$" },
      description: { type: "string" },
      update: { type: ["string", "boolean", "object", "array", "number", "null"] },
      remove: { type: "boolean", default: false },
      ...(minor === "1" ? { copy: { type: "string", pattern: "^\\$" } } : {}),
    },
    required: ["target"],
    patternProperties: ext,
    additionalProperties: false,
  };
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    properties: {
      overlay: { type: "string", pattern: `^1\\.${minor}\\.\\d+(-.+)?$` },
      info: {
        type: "object",
        properties: {
          title: { type: "string" },
          version: { type: "string" },
          description: { type: "string" },
        },
        required: ["title", "version"],
        patternProperties: ext,
        additionalProperties: false,
      },
      extends: { type: "string", format: "uri-reference" },
      actions: { type: "array", minItems: 1, uniqueItems: true, items: action },
    },
    required: ["overlay", "info", "actions"],
    patternProperties: ext,
    additionalProperties: false,
  };
}

// ajv-formats is CommonJS; under some loaders the function arrives as `.default`.
const addFormats = ((addFormatsImport as unknown as { default?: typeof addFormatsImport })
  .default ?? addFormatsImport) as typeof addFormatsImport;
const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats(ajv, ["uri-reference"]);
const validators: Partial<Record<"0" | "1", ValidateFunction>> = {};

function validatorFor(minor: "0" | "1"): ValidateFunction {
  const known = validators[minor];
  if (known) return known;
  const v = ajv.compile(overlaySchema(minor));
  validators[minor] = v;
  return v;
}

/**
 * Checks an Overlay 1.0.x or 1.1.x document against the schema. Returns one message per
 * problem; an empty list means the document is valid. Never throws.
 */
export function validateOverlay(doc: unknown): { pointer: string; message: string }[] {
  try {
    const version = isObject(doc) && typeof doc.overlay === "string" ? doc.overlay : "";
    const check = validatorFor(/^1\.1\./.test(version) ? "1" : "0");
    if (check(doc)) return [];
    return (check.errors ?? []).map((e) => ({
      pointer: e.instancePath,
      message: `${e.instancePath || "overlay"} ${e.message ?? "is invalid"}${
        e.keyword === "additionalProperties"
          ? `: ${String((e.params as { additionalProperty?: string }).additionalProperty)}`
          : ""
      }`,
    }));
  } catch (err) {
    return [{ pointer: "", message: `overlay could not be checked: ${String(err)}` }];
  }
}

/** Whether a parsed document looks like an Overlay (it has an `overlay` member). */
export function isOverlayDocument(doc: unknown): boolean {
  return isObject(doc) && "overlay" in doc;
}

function getAt(root: Json, location: readonly (string | number)[]): Json | undefined {
  let cur: Json | undefined = root;
  for (const k of location) {
    if (Array.isArray(cur) && typeof k === "number") cur = cur[k];
    else if (isObject(cur) && typeof k === "string") cur = cur[k];
    else return undefined;
  }
  return cur;
}

/**
 * Recursive merge per the Overlay specification: objects merge member by member, arrays are
 * appended to, primitives are replaced. A value of another kind replaces the old one in 1.0
 * (whose text says "replace") and is an error in 1.1.
 */
function merge(
  target: JsonObject,
  update: JsonObject,
  strict: boolean,
  onConflict: (key: string) => void,
): void {
  for (const [k, v] of Object.entries(update)) {
    const cur = target[k];
    if (isObject(cur) && isObject(v)) merge(cur, v, strict, onConflict);
    else if (Array.isArray(cur) && Array.isArray(v)) cur.push(...structuredClone(v));
    else if (
      cur === undefined ||
      cur === null ||
      !strict ||
      (typeof cur !== "object" && (v === null || typeof v !== "object"))
    )
      target[k] = structuredClone(v);
    else onConflict(k);
  }
}

/**
 * Applies one Overlay to a document and returns the new document (the input is not changed).
 * Actions run in order, each on the result of the previous one. An invalid overlay is reported
 * and not applied at all, so a half-applied overlay never reaches the compiler.
 */
export function applyOverlay(
  doc: unknown,
  overlay: unknown,
  label: string,
  sink: DiagnosticSink,
): Json {
  return applyOverlays(doc, [{ doc: overlay, label }], sink);
}

/**
 * Applies overlays in order to one copy of the document (a large description is copied once,
 * not once per overlay); the input is not changed.
 */
export function applyOverlays(
  doc: unknown,
  overlays: readonly { doc: unknown; label: string }[],
  sink: DiagnosticSink,
): Json {
  let root: Json | undefined;
  for (const ov of overlays) {
    if (validOverlay(ov.doc, ov.label, sink)) {
      root ??= structuredClone(doc) as Json;
      root = applyInPlace(root, ov.doc as JsonObject, ov.label, sink);
    }
  }
  return root ?? (doc as Json);
}

function validOverlay(overlay: unknown, label: string, sink: DiagnosticSink): boolean {
  const problems = validateOverlay(overlay);
  if (problems.length > 0) {
    for (const p of problems) {
      sink.add(
        "overlay.invalid",
        `${label}#${p.pointer}`,
        p.message,
        "Fix the overlay; see the Overlay 1.0 specification.",
      );
    }
    return false;
  }
  return true;
}

type Node = { value: Json; location: (string | number)[] };

/** The nodes a JSONPath target selects, or undefined (reported) when it is not RFC 9535. */
function selectNodes(
  root: Json,
  target: string,
  where: string,
  sink: DiagnosticSink,
): Node[] | undefined {
  try {
    return query(target, root as JSONValue).nodes.map((n) => ({
      value: n.value as Json,
      location: [...n.location],
    }));
  } catch (err) {
    const msg = err instanceof JSONPathError ? err.message : String(err);
    sink.add(
      "overlay.target_invalid",
      `${where}/target`,
      `target ${target} is not RFC 9535 JSONPath: ${msg}`,
    );
    return undefined;
  }
}

function removeNodes(root: Json, nodes: Node[], where: string, sink: DiagnosticSink): void {
  // Remove array items from the highest index down so earlier removals do not shift later ones.
  const ordered = [...nodes].sort((a, b) => {
    const ai = a.location.at(-1);
    const bi = b.location.at(-1);
    return typeof ai === "number" && typeof bi === "number" ? bi - ai : 0;
  });
  for (const n of ordered) {
    if (n.location.length === 0) {
      sink.add("overlay.target_invalid", `${where}/target`, "the document root cannot be removed");
      continue;
    }
    const parent = getAt(root, n.location.slice(0, -1));
    const key = n.location.at(-1);
    if (Array.isArray(parent) && typeof key === "number") parent.splice(key, 1);
    else if (isObject(parent) && typeof key === "string") delete parent[key];
  }
}

/** The value an update or copy action merges, or undefined (reported) when there is none. */
function actionValue(
  root: Json,
  action: JsonObject,
  where: string,
  sink: DiagnosticSink,
): Json | undefined {
  if ("update" in action) return action.update;
  if (typeof action.copy !== "string") return undefined;
  try {
    const src = query(action.copy, root as JSONValue).nodes;
    if (src.length !== 1) {
      sink.add(
        "overlay.copy_invalid",
        `${where}/copy`,
        `copy ${action.copy} selects ${src.length} nodes; exactly 1 is needed`,
      );
      return undefined;
    }
    return structuredClone(src[0]?.value) as Json;
  } catch (err) {
    sink.add(
      "overlay.copy_invalid",
      `${where}/copy`,
      `copy ${action.copy} is not valid JSONPath: ${String(err)}`,
    );
    return undefined;
  }
}

function updateNodes(
  root: Json,
  nodes: Node[],
  u: { value: Json; strict: boolean; target: string; where: string; sink: DiagnosticSink },
): void {
  const { value, strict, target, where, sink } = u;
  for (const n of nodes) {
    const node = n.location.length === 0 ? root : getAt(root, n.location);
    if (Array.isArray(node)) node.push(structuredClone(value));
    else if (isObject(node)) {
      if (!isObject(value)) {
        sink.add(
          "overlay.update_incompatible",
          `${where}/update`,
          `update for object ${n.location.join(".") || "$"} must be an object`,
        );
        continue;
      }
      merge(node, value, strict, (key) =>
        sink.add(
          "overlay.update_incompatible",
          `${where}/update`,
          `cannot merge ${key} into ${n.location.join(".") || "$"}: kinds differ`,
        ),
      );
    } else {
      sink.add(
        "overlay.target_primitive",
        `${where}/target`,
        `target ${target} selects a primitive value; only objects and arrays can be updated`,
      );
    }
  }
}

/** Runs an overlay's actions in order on `root`, changing it in place. */
function applyInPlace(root: Json, ov: JsonObject, label: string, sink: DiagnosticSink): Json {
  const strict = /^1\.1\./.test(String(ov.overlay));
  (ov.actions as JsonObject[]).forEach((action, i) => {
    const where = docPath(label, ["actions", i]);
    const target = action.target as string;
    const nodes = selectNodes(root, target, where, sink);
    if (!nodes) return;
    if (nodes.length === 0) {
      sink.add("overlay.target_no_match", `${where}/target`, `target ${target} selects nothing`);
      return;
    }
    if (action.remove === true) {
      removeNodes(root, nodes, where, sink);
      return;
    }
    const value = actionValue(root, action, where, sink);
    if (value !== undefined) updateNodes(root, nodes, { value, strict, target, where, sink });
  });
  return root;
}
