import { type DiagnosticSink, docPath } from "./diagnostics.ts";
import type { PendingTool } from "./openapi.ts";
import { completeToolRecord } from "./record.ts";
import { isObject, type Json } from "./schema-merge.ts";
import type { Source, ToolDefinition } from "./schemas.ts";
import { validateToolDefinition } from "./validate.ts";

/** The list of hand-written tools in a manual file: `{ tools: [...] }` or a bare array. */
export function manualToolList(doc: unknown): unknown[] | undefined {
  if (Array.isArray(doc)) return doc;
  if (isObject(doc) && Array.isArray(doc.tools)) return doc.tools;
  return undefined;
}

/**
 * Completes and validates hand-written definitions (manual files, defineTool() exports).
 * An invalid definition is skipped with one diagnostic per schema problem.
 */
export function compileHandwritten(
  list: readonly unknown[],
  label: string,
  source: Extract<Source, "manual" | "sdk">,
  sink: DiagnosticSink,
  listPtr: (string | number)[] = ["tools"],
): PendingTool[] {
  const out: PendingTool[] = [];
  const code = source === "manual" ? "manual.tool_invalid" : "sdk.tool_invalid";
  list.forEach((raw, i) => {
    const where = docPath(label, [...listPtr, i]);
    if (!isObject(raw)) {
      sink.add(code, where, "a tool definition must be an object; skipped");
      return;
    }
    const record = completeToolRecord(raw, source);
    const problems = validateToolDefinition(record);
    if (problems.length > 0) {
      for (const p of problems)
        sink.add(
          code,
          `${where}${p.path.slice(1)}`,
          `${String(raw.name ?? "tool")}: ${p.message}`,
          p.suggestion,
        );
      return;
    }
    const tool = record as ToolDefinition;
    out.push({
      tool,
      candidate: {
        name: tool.name,
        key: `${source}|${tool.name}|${tool.method} ${tool.path}`,
        path: where,
      },
    });
  });
  return out;
}

/** Compiles a manual tool file. */
export function compileManual(doc: Json, label: string, sink: DiagnosticSink): PendingTool[] {
  const list = manualToolList(doc);
  if (!list) {
    sink.add(
      "manual.tool_invalid",
      `${label}#`,
      "expected { tools: [...] } or an array of tool definitions",
    );
    return [];
  }
  return compileHandwritten(list, label, "manual", sink, Array.isArray(doc) ? [] : ["tools"]);
}
