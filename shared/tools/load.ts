import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { extname, resolve } from "node:path";
import { parse as parseYaml } from "yaml";
import { compile } from "./compile.ts";
import { DiagnosticSink } from "./diagnostics.ts";
import type { Json } from "./schema-merge.ts";
import type { CompileResult, Diagnostic } from "./schemas.ts";
import { SOURCES_IN_ORDER } from "./sources/index.ts";
import { fetchMcpTools, type McpServerSpec } from "./sources/mcp/live.ts";
import type { CompileInput, InputKind } from "./sources/types.ts";

export type { InputKind } from "./sources/types.ts";

/** A compiler input named on the command line: a file (kind guessed unless given) or a live MCP server. */
export type InputSpec = { file: string; kind?: InputKind } | { mcp: McpServerSpec; label?: string };

/** Parses JSON or YAML text. YAML aliases are capped so a "billion laughs" file cannot explode. */
export function parseDocumentText(
  text: string,
): { ok: true; doc: Json } | { ok: false; error: string } {
  const trimmed = text.trimStart();
  if (trimmed.startsWith("{") || trimmed.startsWith("[")) {
    try {
      return { ok: true, doc: JSON.parse(text) as Json };
    } catch {
      // JSON-looking YAML (flow style) still parses below.
    }
  }
  try {
    return { ok: true, doc: parseYaml(text, { maxAliasCount: 100 }) as Json };
  } catch (err) {
    return {
      ok: false,
      error: err instanceof Error ? (err.message.split("\n")[0] ?? "parse error") : String(err),
    };
  }
}

/** Guesses what a parsed document is: OpenAPI/Swagger, Overlay, manual tools or an MCP tools/list. */
export function classifyDocument(doc: unknown): InputKind | undefined {
  return SOURCES_IN_ORDER.find((s) => s.detect(doc))?.kind;
}

/** Reads a file named by a relative $ref; parse failures read as undefined. */
export function readDocumentSync(absolutePath: string): Json | undefined {
  try {
    const parsed = parseDocumentText(readFileSync(absolutePath, "utf8"));
    return parsed.ok ? parsed.doc : undefined;
  } catch {
    return undefined;
  }
}

/** "mcp:tools.json" style prefixes force the kind of a file input. */
export function parseInputArg(arg: string): InputSpec {
  const m = /^([a-z]+):(.+)$/.exec(arg);
  const kind = SOURCES_IN_ORDER.find((s) => s.kind === m?.[1])?.kind;
  return m && kind ? { file: m[2] as string, kind } : { file: arg };
}

/** Lists a live MCP server's tools as an input; undefined (reported) when that fails. */
async function loadMcpServer(
  spec: { mcp: McpServerSpec; label?: string },
  sink: DiagnosticSink,
): Promise<CompileInput | undefined> {
  const label =
    spec.label ??
    (spec.mcp.transport === "http"
      ? spec.mcp.url
      : [spec.mcp.command, ...(spec.mcp.args ?? [])].join(" "));
  try {
    return { kind: "mcp", label, doc: (await fetchMcpTools(spec.mcp)) as unknown as Json };
  } catch (err) {
    sink.add(
      "mcp.fetch_failed",
      `${label}#`,
      `listing tools failed: ${err instanceof Error ? err.message : String(err)}`,
    );
    return undefined;
  }
}

/**
 * Loads inputs from disk (and live MCP servers) into compiler inputs. Overlay files come last,
 * in the order given. Problems become diagnostics; nothing here throws.
 */
export async function loadInputs(
  specs: readonly InputSpec[],
  overlayFiles: readonly string[] = [],
  cwd = process.cwd(),
): Promise<{ inputs: CompileInput[]; diagnostics: Diagnostic[] }> {
  const sink = new DiagnosticSink();
  const inputs: CompileInput[] = [];
  const all: InputSpec[] = [
    ...specs,
    ...overlayFiles.map((file) => ({ file, kind: "overlay" as const })),
  ];
  for (const spec of all) {
    if ("mcp" in spec) {
      const input = await loadMcpServer(spec, sink);
      if (input) inputs.push(input);
      continue;
    }
    const label = spec.file;
    const abs = resolve(cwd, spec.file);
    const reader = SOURCES_IN_ORDER.find(
      (s) =>
        s.loadFile &&
        (spec.kind === s.kind ||
          (spec.kind === undefined && s.fileExtensions?.includes(extname(abs)))),
    );
    if (reader?.loadFile) {
      const loaded = await reader.loadFile(abs, label);
      if ("input" in loaded) inputs.push(loaded.input);
      else sink.add(loaded.failure.code, loaded.failure.path, loaded.failure.message);
      continue;
    }
    let text: string;
    try {
      text = await readFile(abs, "utf8");
    } catch (err) {
      sink.add(
        "input.read_failed",
        `${label}#`,
        `cannot read ${label}: ${err instanceof Error ? err.message : String(err)}`,
      );
      continue;
    }
    const parsed = parseDocumentText(text);
    if (!parsed.ok) {
      sink.add(
        "input.parse_failed",
        `${label}#`,
        `${label} is not valid JSON or YAML: ${parsed.error}`,
      );
      continue;
    }
    const kind = spec.kind ?? classifyDocument(parsed.doc);
    if (kind === undefined) {
      sink.add(
        "input.unknown_format",
        `${label}#`,
        `${label} is not OpenAPI, Swagger, Overlay, MCP tools/list or a manual tool file`,
        "Prefix the argument with openapi:, overlay:, mcp: or manual: to say what it is.",
      );
      continue;
    }
    if (kind === "openapi")
      inputs.push({ kind, label, doc: parsed.doc, docId: abs, readDocument: readDocumentSync });
    else inputs.push({ kind, label, doc: parsed.doc });
  }
  return { inputs, diagnostics: sink.items };
}

/** Loads and compiles in one step (what `switchyard tools compile` does). */
export async function compileFromFiles(
  specs: readonly InputSpec[],
  overlayFiles: readonly string[] = [],
  cwd = process.cwd(),
): Promise<CompileResult> {
  const { inputs, diagnostics } = await loadInputs(specs, overlayFiles, cwd);
  return compile(inputs, diagnostics);
}
