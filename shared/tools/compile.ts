import { fitToBudget } from "./budget.ts";
import type { DiagnosticCode } from "./codes.ts";
import { DiagnosticSink, docPath } from "./diagnostics.ts";
import { inlineDefs } from "./inline.ts";
import { assignUniqueNames } from "./naming.ts";
import type { CompileResult, Diagnostic, ToolDefinition } from "./schemas.ts";
import { SOURCES_IN_ORDER, sourceFor } from "./sources/index.ts";
import type { CompileInput, PlannedTool, SourceContext } from "./sources/types.ts";
import { validateToolDefinition } from "./validate.ts";

export type { CompileInput, InputKind } from "./sources/types.ts";

/** Size limits of a compile (bytes of compact JSON, UTF-8); 0 turns a limit off. */
export interface CompileOptions {
  /** Largest tool; bigger ones are reduced (see budget.ts) or left out. */
  maxToolBytes?: number;
  /** Largest total of all tools; tools past it are left out with an error each. */
  maxOutputBytes?: number;
  /**
   * Inline every $ref (no $defs) for consumers without $defs support, while the tool stays
   * within this many bytes; true means the tool budget.
   */
  inlineRefs?: boolean | number;
  /** Called after each planned tool is done (written or left out), with the number planned. */
  progress?: (done: number, total: number) => void;
}

/** The documented defaults: 64 KiB per tool (about 16k tokens), 256 MiB per compile. */
export const DEFAULT_BUDGETS = { maxToolBytes: 65_536, maxOutputBytes: 268_435_456 } as const;

/** A tool as the compiler hands it out, with its compact JSON (what the budgets measure). */
export interface CompiledTool {
  tool: ToolDefinition;
  json: string;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Plans every tool of every input: sources that rewrite others (overlays) run first, then each
 * input's source plans its tools, then names are made unique across all of them. Returns the
 * planned tools sorted by final name.
 */
function sourceContext(sink: DiagnosticSink): SourceContext {
  let seq = 0;
  return {
    sink,
    startTool() {
      seq++;
      sink.group = seq;
      return seq;
    },
  };
}

function prepareWith(inputs: readonly CompileInput[], ctx: SourceContext): CompileInput[] {
  let prepared = [...inputs];
  for (const source of SOURCES_IN_ORDER)
    if (source.prepare) prepared = source.prepare(prepared, ctx);
  return prepared;
}

/**
 * Runs the sources that rewrite other inputs (overlays onto OpenAPI documents) and returns the
 * inputs as they will be compiled; `tools compile --emit-document` prints them.
 */
export function prepareInputs(
  inputs: readonly CompileInput[],
  sink: DiagnosticSink,
): CompileInput[] {
  return prepareWith(inputs, sourceContext(sink));
}

function planAll(inputs: readonly CompileInput[], sink: DiagnosticSink): PlannedTool[] {
  const ctx = sourceContext(sink);
  const prepared = prepareWith(inputs, ctx);
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

/** Applies the tool budget, then inlining when asked; undefined when the tool is left out. */
function sized(
  tool: ToolDefinition,
  p: PlannedTool,
  ctx: { sink: DiagnosticSink; options: CompileOptions },
): CompiledTool | undefined {
  const report = (code: DiagnosticCode, message: string) =>
    ctx.sink.add(code, p.candidate.path, message);
  const maxToolBytes = ctx.options.maxToolBytes ?? DEFAULT_BUDGETS.maxToolBytes;
  const fitted = fitToBudget(tool, maxToolBytes, report);
  if (!fitted || !ctx.options.inlineRefs) return fitted;
  const budget =
    typeof ctx.options.inlineRefs === "number"
      ? ctx.options.inlineRefs
      : maxToolBytes > 0
        ? maxToolBytes
        : DEFAULT_BUDGETS.maxToolBytes;
  const inlined = inlineDefs(fitted.tool, budget, report);
  return inlined === fitted.tool ? fitted : { tool: inlined, json: JSON.stringify(inlined) };
}

/**
 * Compiles parsed inputs, yielding tools one at a time in name order. Every tool is planned
 * (named) before any is built, and each is built only when it is taken, so a caller that writes
 * tools out as they come holds one tool at a time, not the whole output. Each tool is held to
 * the tool budget and the running total to the output budget; what is cut or left out is
 * reported. Diagnostics collect in `sink`; read them with `sink.ordered()` after the last tool.
 * Never throws for bad input.
 */
export function* compileTools(
  inputs: readonly CompileInput[],
  sink: DiagnosticSink,
  options: CompileOptions = {},
): Generator<CompiledTool> {
  const maxOutputBytes = options.maxOutputBytes ?? DEFAULT_BUDGETS.maxOutputBytes;
  let total = 0;
  const planned = planAll(inputs, sink);
  let done = 0;
  for (const p of planned) {
    options.progress?.(done++, planned.length);
    const tool = buildTool(p, sink);
    const out = tool && sized(tool, p, { sink, options });
    if (!out) continue;
    const bytes = Buffer.byteLength(out.json);
    if (maxOutputBytes > 0 && total + bytes > maxOutputBytes) {
      sink.add(
        "budget.compile_exceeded",
        p.candidate.path,
        `tool ${out.tool.name} (${bytes} bytes) left out: the compile's ${maxOutputBytes}-byte output budget is used up (${total} bytes so far)`,
        "Raise --max-output-bytes, lower --max-tool-bytes, or compile fewer operations.",
      );
      continue;
    }
    total += bytes;
    yield out;
  }
  options.progress?.(planned.length, planned.length);
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
  options: CompileOptions = {},
): CompileResult {
  const sink = new DiagnosticSink();
  sink.push(...preDiagnostics);
  const tools = [...compileTools(inputs, sink, options)].map((c) => c.tool);
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
