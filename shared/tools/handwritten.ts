import { type DiagnosticSink, docPath } from "./diagnostics.ts";
import { checkInputSchema } from "./json-schema.ts";
import { completeToolRecord } from "./record.ts";
import { isObject, type Json } from "./schema-merge.ts";
import type { Source, ToolDefinition } from "./schemas.ts";
import { type PlannedTool, plannedRecord, type SourceContext } from "./sources/types.ts";
import { validateToolDefinition } from "./validate.ts";

/**
 * Completes and validates hand-written definitions (manual files, defineTool() exports).
 * An invalid definition is skipped with one diagnostic per schema problem.
 */
export function planHandwritten(opts: {
  list: readonly unknown[];
  label: string;
  source: Extract<Source, "manual" | "sdk">;
  ctx: SourceContext;
  listPtr?: (string | number)[];
}): PlannedTool[] {
  const { list, label, source, ctx } = opts;
  const sink: DiagnosticSink = ctx.sink;
  const out: PlannedTool[] = [];
  const code = source === "manual" ? "manual.tool_invalid" : "sdk.tool_invalid";
  list.forEach((raw, i) => {
    const seq = ctx.startTool();
    const ptr = [...(opts.listPtr ?? ["tools"]), i];
    const where = docPath(label, ptr);
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
    tool.inputSchema = checkInputSchema(tool.inputSchema as Json, {
      label,
      pointer: [...ptr, "inputSchema"],
      sink,
    }) as ToolDefinition["inputSchema"];
    const candidate = {
      name: tool.name,
      key: `${source}|${tool.name}|${tool.method} ${tool.path}`,
      path: where,
      seq,
    };
    out.push(plannedRecord(seq, candidate, tool));
  });
  return out;
}
