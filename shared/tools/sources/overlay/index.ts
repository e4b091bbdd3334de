import { createHash } from "node:crypto";
import { isObject, type Json } from "../../schema-merge.ts";
import type { CompileInput, ToolSource } from "../types.ts";
import { applyOverlays, isOverlayDocument } from "./apply.ts";

const OP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/**
 * A digest of each operation (with its path-level parameters), to spot what an overlay changed.
 * Digests rather than the serialised text keep this small for a 50 MB description.
 */
function operationFingerprints(doc: Json): Map<string, string> {
  const out = new Map<string, string>();
  if (!isObject(doc) || !isObject(doc.paths)) return out;
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!isObject(item)) continue;
    for (const m of OP_METHODS) {
      if (!(m in item)) continue;
      const text = JSON.stringify([item.parameters ?? null, item[m]]) ?? "";
      out.set(`${m.toUpperCase()} ${path}`, createHash("sha256").update(text).digest("base64"));
    }
  }
  return out;
}

/**
 * Overlay 1.0/1.1 documents. They make no tools themselves: before planning, they are applied in
 * the order given to every OpenAPI input, which then knows which operations they changed.
 */
export const overlaySource: ToolSource = {
  kind: "overlay",
  detect: isOverlayDocument,
  prepare(inputs, ctx) {
    const overlays = inputs.filter((i) => i.kind === "overlay");
    if (overlays.length === 0) return [...inputs];
    return inputs.map((input): CompileInput => {
      if (input.kind !== "openapi") return input;
      const before = operationFingerprints(input.doc as Json);
      const doc = applyOverlays(input.doc, overlays, ctx.sink);
      const after = operationFingerprints(doc);
      const changed = new Set([...after].filter(([k, v]) => before.get(k) !== v).map(([k]) => k));
      return { ...input, doc, overlayChanged: changed };
    });
  },
  plan: () => [],
};
