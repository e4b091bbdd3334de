import { DiagnosticSink, docPath } from "./diagnostics.ts";
import { assignUniqueNames } from "./naming.ts";
import type { CompileResult, Diagnostic, ToolDefinition } from "./schemas.ts";
import { SOURCES_IN_ORDER, sourceFor } from "./sources/index.ts";
import type { CompileInput, PlannedTool, SourceContext } from "./sources/types.ts";
import { validateToolDefinition } from "./validate.ts";

export type { CompileInput, InputKind } from "./sources/types.ts";

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Plans every tool of every input: sources that rewrite others (overlays) run first, then each
 * input's source plans its tools, then names are made unique across all of them. Returns the
 * planned tools sorted by final name.
 */
function planAll(inputs: readonly CompileInput[], sink: DiagnosticSink): PlannedTool[] {
  let seq = 0;
  const ctx: SourceContext = {
    sink,
    startTool() {
      seq++;
      sink.group = seq;
      return seq;
    },
  };
  let prepared = [...inputs];
  for (const source of SOURCES_IN_ORDER)
    if (source.prepare) prepared = source.prepare(prepared, ctx);
  const planned: PlannedTool[] = [];
  for (const input of prepared) {
    try {
      planned.push(...sourceFor(input.kind).plan(input, ctx));
    } catch (err) {
      sink.add(
        "compile.internal_error",
        docPath(input.label, []) || "#",
        `compiling ${input.label} failed: ${errorText(err)}`,
        "Report this input; the rest of the inputs were compiled.",
      );
    }
  }
  assignUniqueNames(
    planned.map((p) => p.candidate),
    sink,
  );
  return planned.sort((a, b) =>
    a.candidate.name < b.candidate.name ? -1 : a.candidate.name > b.candidate.name ? 1 : 0,
  );
}

/** Builds one planned tool and checks it against the record schema; undefined when dropped. */
function buildTool(p: PlannedTool, sink: DiagnosticSink): ToolDefinition | undefined {
  sink.group = p.seq;
  const name = p.candidate.name;
  let tool: ToolDefinition;
  try {
    tool = p.build(name);
  } catch (err) {
    sink.add(
      "compile.internal_error",
      p.candidate.path,
      `building tool ${name} failed: ${errorText(err)}`,
      "Report this input; the other tools were compiled.",
    );
    return undefined;
  }
  const problems = validateToolDefinition(tool);
  if (problems.length === 0) return tool;
  for (const d of problems) sink.add("tool.invalid", p.candidate.path, `${name}: ${d.message}`);
  return undefined;
}

/**
 * Compiles parsed inputs, yielding tools one at a time in name order. Every tool is planned
 * (named) before any is built, and each is built only when it is taken, so a caller that writes
 * tools out as they come holds one tool at a time, not the whole output. Diagnostics collect in
 * `sink`; read them with `sink.ordered()` after the last tool. Never throws for bad input.
 */
export function* compileTools(
  inputs: readonly CompileInput[],
  sink: DiagnosticSink,
): Generator<ToolDefinition> {
  for (const p of planAll(inputs, sink)) {
    const tool = buildTool(p, sink);
    if (tool) yield tool;
  }
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
  sink.push(...preDiagnostics);
  const tools = [...compileTools(inputs, sink)];
  return { tools, diagnostics: sink.ordered() };
}

/** True when any diagnostic is an error (the CLI then exits with 1). */
export function hasErrors(result: { diagnostics: readonly Diagnostic[] }): boolean {
  return result.diagnostics.some((d) => d.severity === "error");
}

/** The canonical serialisation written by `switchyard tools compile`. */
export function serializeResult(result: CompileResult): string {
  return `${JSON.stringify(result, null, 2)}\n`;
}
