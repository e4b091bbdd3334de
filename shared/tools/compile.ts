import { DiagnosticSink, docPath } from "./diagnostics.ts";
import { compileHandwritten, compileManual } from "./manual.ts";
import { compileMcpTools } from "./mcp.ts";
import { assignUniqueNames } from "./naming.ts";
import { compileOpenApi, type PendingTool } from "./openapi.ts";
import { applyOverlay } from "./overlay.ts";
import type { ReadDocument } from "./refs.ts";
import { isObject, type Json } from "./schema-merge.ts";
import type { CompileResult, Diagnostic } from "./schemas.ts";
import { validateToolDefinition } from "./validate.ts";

/** One parsed input of the compiler. Loading files is done by load.ts; compile() is pure. */
export type CompileInput =
  | { kind: "openapi"; label: string; doc: unknown; docId?: string; readDocument?: ReadDocument }
  | { kind: "overlay"; label: string; doc: unknown }
  | { kind: "mcp"; label: string; doc: unknown }
  | { kind: "manual"; label: string; doc: unknown }
  | { kind: "sdk"; label: string; tools: readonly unknown[] };

const OP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** Serialises each operation (with its path-level parameters) to spot what an overlay changed. */
function operationFingerprints(doc: Json): Map<string, string> {
  const out = new Map<string, string>();
  if (!isObject(doc) || !isObject(doc.paths)) return out;
  for (const [path, item] of Object.entries(doc.paths)) {
    if (!isObject(item)) continue;
    for (const m of OP_METHODS) {
      if (m in item)
        out.set(`${m.toUpperCase()} ${path}`, JSON.stringify([item.parameters ?? null, item[m]]));
    }
  }
  return out;
}

/**
 * Compiles parsed inputs into a compileResult. Overlays apply, in the order given, to every
 * OpenAPI input before compiling. Never throws: a failure inside one input becomes a
 * compile.internal_error diagnostic and the other inputs still compile. Tools are sorted by
 * name, so the output is byte-identical for the same inputs.
 */
export function compile(
  inputs: readonly CompileInput[],
  preDiagnostics: readonly Diagnostic[] = [],
): CompileResult {
  const sink = new DiagnosticSink();
  sink.items.push(...preDiagnostics);
  const pending: PendingTool[] = [];
  const overlays = inputs.filter((i) => i.kind === "overlay");
  for (const input of inputs) {
    if (input.kind === "overlay") continue;
    try {
      if (input.kind === "openapi") {
        let doc = input.doc as Json;
        let changed: Set<string> | undefined;
        if (overlays.length > 0) {
          const before = operationFingerprints(doc);
          for (const ov of overlays) doc = applyOverlay(doc, ov.doc as Json, ov.label, sink);
          const after = operationFingerprints(doc);
          changed = new Set([...after].filter(([k, v]) => before.get(k) !== v).map(([k]) => k));
        }
        pending.push(
          ...compileOpenApi(
            {
              label: input.label,
              doc,
              ...(input.docId ? { docId: input.docId } : {}),
              ...(input.readDocument ? { readDocument: input.readDocument } : {}),
              ...(changed ? { overlayChanged: changed } : {}),
            },
            sink,
          ),
        );
      } else if (input.kind === "mcp")
        pending.push(...compileMcpTools(input.doc as Json, input.label, sink));
      else if (input.kind === "manual")
        pending.push(...compileManual(input.doc as Json, input.label, sink));
      else {
        if (input.tools.length === 0)
          sink.add("sdk.no_tools", `${input.label}#`, "the module exports no defineTool() results");
        pending.push(...compileHandwritten(input.tools, input.label, "sdk", sink, []));
      }
    } catch (err) {
      sink.add(
        "compile.internal_error",
        docPath(input.label, []) || "#",
        `compiling ${input.label} failed: ${err instanceof Error ? err.message : String(err)}`,
        "Report this input; the rest of the inputs were compiled.",
      );
    }
  }
  assignUniqueNames(
    pending.map((p) => p.candidate),
    sink,
  );
  const tools = [];
  for (const p of pending) {
    const tool = { ...p.tool, name: p.candidate.name };
    const problems = validateToolDefinition(tool);
    if (problems.length > 0) {
      for (const d of problems)
        sink.add("tool.invalid", p.candidate.path, `${tool.name}: ${d.message}`);
      continue;
    }
    tools.push(tool);
  }
  tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { tools, diagnostics: sink.items };
}

/** True when any diagnostic is an error (the CLI then exits with 1). */
export function hasErrors(result: { diagnostics: readonly Diagnostic[] }): boolean {
  return result.diagnostics.some((d) => d.severity === "error");
}

/** The canonical serialisation written by `switchyard tools compile`. */
export function serializeResult(result: CompileResult): string {
  return `${JSON.stringify(result, null, 2)}\n`;
}
