import type { DiagnosticCode } from "../codes.ts";
import type { DiagnosticSink } from "../diagnostics.ts";
import type { NameCandidate } from "../naming.ts";
import type { Severity, Source, ToolDefinition } from "../schemas.ts";

/** Reads and parses a file named by a relative $ref; undefined when it cannot. */
export type ReadDocument = (absolutePath: string) => unknown;

/**
 * The kind of a compiler input: the `kind` of a registered source (sources/index.ts). The shipped
 * sources are named like the tool-definition `source` values (SOURCES); a source registered
 * later names itself.
 */
export type InputKind = Source | (string & {});

/** One parsed input of the compiler. Loading files is done by load.ts; compiling is pure. */
export interface CompileInput {
  kind: InputKind;
  /** Name used in diagnostics (usually the file path as given). */
  label: string;
  /** The parsed document (for sdk: the module's defineTool() results). */
  doc: unknown;
  /** Absolute path of the document, for relative-file $refs. */
  docId?: string;
  readDocument?: ReadDocument;
  /** "METHOD path" keys of operations an overlay changed (set by the overlay source). */
  overlayChanged?: ReadonlySet<string>;
}

/** A tool whose name is known but whose record is built only when it is written out. */
export interface PlannedTool {
  /** Position in document order; the tool's diagnostics are grouped under it. */
  readonly seq: number;
  readonly candidate: NameCandidate;
  /** Builds the record under its final name; diagnostics go to the compile's sink. */
  build(name: string): ToolDefinition;
}

/** What a source gets while planning: the sink and a counter for tool sequence numbers. */
export interface SourceContext {
  readonly sink: DiagnosticSink;
  /** Starts a new tool: returns its sequence number and groups the next diagnostics under it. */
  startTool(): number;
}

/** How a file is turned into a compiler input: parsed text, or something the source reads itself. */
export type LoadedInput =
  | { input: CompileInput }
  | { failure: { code: DiagnosticCode; path: string; message: string } };

/** The diagnostic codes a source reports: code → [severity, meaning]. */
export type CodeTable = Record<string, readonly [Severity, string]>;

/**
 * One kind of compiler input. A new kind is a folder with a module that implements this
 * interface, registered once (sources/index.ts: a line in SHIPPED, or registerToolSource).
 */
export interface ToolSource {
  readonly kind: InputKind;
  /** File name endings this source reads by itself (SDK modules); others are parsed JSON/YAML. */
  readonly fileExtensions?: readonly string[];
  /** Whether a parsed JSON/YAML document is of this kind (sources are asked in registry order). */
  detect(doc: unknown): boolean;
  /** Reads a file this source claims by extension (SDK modules are imported, not parsed). */
  loadFile?(absolutePath: string, label: string): Promise<LoadedInput>;
  /** Rewrites the other inputs before anything is planned (overlays rewrite OpenAPI inputs). */
  prepare?(inputs: readonly CompileInput[], ctx: SourceContext): CompileInput[];
  /** Plans the tools of one input. Never throws for malformed input: it reports diagnostics. */
  plan(input: CompileInput, ctx: SourceContext): PlannedTool[];
}

/** A planned tool whose record was complete when planned (manual, MCP, SDK). */
export function plannedRecord(
  seq: number,
  candidate: NameCandidate,
  tool: ToolDefinition,
): PlannedTool {
  return { seq, candidate, build: (name) => ({ ...tool, name }) };
}
