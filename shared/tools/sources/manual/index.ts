import { planHandwritten } from "../../handwritten.ts";
import { isObject } from "../../schema-merge.ts";
import type { CompileInput, PlannedTool, SourceContext, ToolSource } from "../types.ts";

/** The list of hand-written tools in a manual file: `{ tools: [...] }` or a bare array. */
export function manualToolList(doc: unknown): unknown[] | undefined {
  if (Array.isArray(doc)) return doc;
  if (isObject(doc) && Array.isArray(doc.tools)) return doc.tools;
  return undefined;
}

/** Manual tool files (YAML/JSON): records that may leave out fields with defaults. */
export const manualSource: ToolSource = {
  kind: "manual",
  detect(doc) {
    const list = manualToolList(doc);
    return (
      list !== undefined &&
      list.length > 0 &&
      list.every((t) => isObject(t) && ("method" in t || "path" in t || "schemaVersion" in t))
    );
  },
  plan(input: CompileInput, ctx: SourceContext): PlannedTool[] {
    const list = manualToolList(input.doc);
    if (!list) {
      ctx.sink.add(
        "manual.tool_invalid",
        `${input.label}#`,
        "expected { tools: [...] } or an array of tool definitions",
      );
      return [];
    }
    return planHandwritten({
      list,
      label: input.label,
      source: "manual",
      ctx,
      listPtr: Array.isArray(input.doc) ? [] : ["tools"],
    });
  },
};
