import type { DiagnosticCode } from "./codes.ts";
import { defDistances, defInfo, jsonBytes, leanSchema, STUB_TEXT, stubFor } from "./defs-graph.ts";
import type { Json, JsonObject } from "./schema-merge.ts";
import type { ToolDefinition } from "./schemas.ts";

/** Reports one diagnostic about the tool being fitted. */
export type Report = (code: DiagnosticCode, message: string) => void;

/** What the tool record says about a reduction (extensions["x-service-schema-reduced"]). */
export interface Reduction {
  originalBytes: number;
  budgetBytes: number;
  annotationsDropped: true;
  /** Definitions kept whole up to this distance from the inputs; absent when all were kept. */
  keptDepth?: number;
  stubbedDefs?: number;
}

function withDefs(tool: ToolDefinition, defs: Record<string, Json>, lean = false): ToolDefinition {
  const { $defs: _old, ...rest } = tool.inputSchema;
  const root = lean ? (leanSchema(rest as Json) as JsonObject) : rest;
  const inputSchema = Object.keys(defs).length > 0 ? { ...root, $defs: defs } : root;
  return { ...tool, inputSchema: inputSchema as ToolDefinition["inputSchema"] };
}

/** Bytes of `,"$defs":{…}` for the given entries (name → bytes of the value). */
function defsBytes(entries: Iterable<[string, number]>): number {
  let total = 0;
  let n = 0;
  for (const [name, bytes] of entries) {
    total += jsonBytes(name) + 1 + bytes;
    n++;
  }
  return n === 0 ? 0 : `,"$defs":`.length + 2 + total + (n - 1);
}

/** The largest depth whose kept definitions (lean) plus stubs fit; -1 when even depth 0 does not. */
function fittingDepth(
  baseBytes: number,
  defs: Record<string, Json>,
  dist: Map<string, number>,
  maxBytes: number,
): number {
  const maxDist = Math.max(0, ...dist.values());
  for (let depth = maxDist - 1; depth >= 0; depth--) {
    const entries: [string, number][] = [];
    for (const [name, d] of dist) {
      const def = defs[name] as Json;
      if (d <= depth) entries.push([name, defInfo(def).leanBytes]);
      else if (d === depth + 1) entries.push([name, defInfo(def).stubBytes]);
    }
    if (baseBytes + defsBytes(entries) <= maxBytes) return depth;
  }
  return -1;
}

function cutToDepth(
  defs: Record<string, Json>,
  dist: Map<string, number>,
  depth: number,
): { defs: Record<string, Json>; stubbed: number } {
  const out: Record<string, Json> = {};
  let stubbed = 0;
  for (const name of Object.keys(defs)) {
    const d = dist.get(name);
    if (d === undefined) continue;
    const def = defs[name] as Json;
    if (d <= depth) out[name] = defInfo(def).lean;
    else if (d === depth + 1) {
      out[name] = stubFor(def, STUB_TEXT);
      stubbed++;
    }
  }
  return { defs: out, stubbed };
}

/**
 * Fits one tool into `maxBytes` (compact JSON, UTF-8). In order, until it fits:
 *  1. annotations are dropped from every schema in inputSchema, $defs included (descriptions,
 *     titles, examples, x- keys; the tool's own description stays);
 *  2. definitions are kept whole only up to a distance from the inputs, the largest that fits;
 *     those one step further become stubs `{type, description}` that accept any value of their
 *     type, and those beyond disappear (nothing refers to them any more);
 *  3. otherwise the tool is left out (budget.tool_omitted, an error).
 * A reduced tool carries extensions["x-service-schema-reduced"] and a budget.tool_reduced
 * warning. Returns the tool and its compact JSON, or undefined when left out.
 */
export function fitToBudget(
  tool: ToolDefinition,
  maxBytes: number,
  report: Report,
): { tool: ToolDefinition; json: string } | undefined {
  const defs = (tool.inputSchema.$defs ?? {}) as Record<string, Json>;
  const names = Object.keys(defs);
  // The size from cached parts: a large tool is never serialised whole just to learn its size.
  const bytes =
    jsonBytes(withDefs(tool, {})) +
    defsBytes(names.map((n): [string, number] => [n, defInfo(defs[n] as Json).bytes]));
  if (maxBytes <= 0 || bytes <= maxBytes) return { tool, json: JSON.stringify(tool) };
  const reduction: Reduction = {
    originalBytes: bytes,
    budgetBytes: maxBytes,
    annotationsDropped: true,
  };
  const marked = (t: ToolDefinition): ToolDefinition => ({
    ...t,
    extensions: { ...t.extensions, "x-service-schema-reduced": reduction },
  });
  const base = marked(withDefs(tool, {}, true));
  const baseBytes = jsonBytes(base);
  const dist = defDistances(base.inputSchema as Json, defs);
  const leanEntries = [...dist.keys()].map((n): [string, number] => [
    n,
    defInfo(defs[n] as Json).leanBytes,
  ]);
  // Estimates pick where to start; every candidate is then measured exactly before it is taken.
  const tries: { depth?: number }[] = [];
  if (baseBytes + defsBytes(leanEntries) <= maxBytes) tries.push({});
  for (let depth = fittingDepth(baseBytes, defs, dist, maxBytes); depth >= 0; depth--)
    tries.push({ depth });
  for (const t of tries) {
    const cut = cutToDepth(defs, dist, t.depth ?? Number.MAX_SAFE_INTEGER);
    const r: Reduction = { ...reduction };
    let how = "annotations dropped";
    if (t.depth !== undefined) {
      r.keptDepth = t.depth;
      r.stubbedDefs = cut.stubbed;
      how += `; definitions kept up to depth ${t.depth}, ${cut.stubbed} replaced by stubs`;
    }
    const lean = withDefs(tool, cut.defs, true);
    const candidate = {
      ...lean,
      extensions: { ...lean.extensions, "x-service-schema-reduced": r },
    };
    const text = JSON.stringify(candidate);
    const fitted = Buffer.byteLength(text);
    if (fitted > maxBytes) continue;
    report(
      "budget.tool_reduced",
      `tool ${tool.name} was ${bytes} bytes, over the ${maxBytes}-byte tool budget: ${how}; now ${fitted} bytes`,
    );
    return { tool: candidate, json: text };
  }
  report(
    "budget.tool_omitted",
    `tool ${tool.name} is ${bytes} bytes, over the ${maxBytes}-byte tool budget even with every definition stubbed; left out`,
  );
  return undefined;
}
