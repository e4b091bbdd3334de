import { readFile } from "node:fs/promises";
import { parseDocumentText } from "./load.ts";
import { isObject } from "./schema-merge.ts";
import type { Diagnostic, ToolDefinition } from "./schemas.ts";

/** A compile output read back: the canonical JSON, NDJSON lines, or any JSON/YAML value. */
export type ReadOutput =
  | { ok: true; format: "ndjson"; value: { tools: ToolDefinition[]; diagnostics: Diagnostic[] } }
  | { ok: true; format: "document"; value: unknown }
  | { ok: false; error: string };

/** Whether text is NDJSON compile output: its first line alone is a tool or a diagnostic. */
function looksLikeNdjson(text: string): boolean {
  const end = text.indexOf("\n");
  const first = (end === -1 ? text : text.slice(0, end)).trim();
  if (!first.startsWith("{") || !first.endsWith("}")) return false;
  try {
    const v = JSON.parse(first) as unknown;
    return isObject(v) && ("schemaVersion" in v || "severity" in v);
  } catch {
    return false;
  }
}

/**
 * Reads what `switchyard tools compile` wrote (JSON or NDJSON), or any JSON/YAML document.
 * NDJSON lines are sorted into tools (lines with schemaVersion) and diagnostics.
 */
export async function readCompileOutput(file: string): Promise<ReadOutput> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    return {
      ok: false,
      error: `cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (looksLikeNdjson(text)) {
    const tools: ToolDefinition[] = [];
    const diagnostics: Diagnostic[] = [];
    let lineNo = 0;
    for (const line of text.split("\n")) {
      lineNo++;
      if (line.trim() === "") continue;
      let v: unknown;
      try {
        v = JSON.parse(line);
      } catch {
        return { ok: false, error: `${file}:${lineNo} is not a JSON line` };
      }
      if (isObject(v) && "severity" in v && !("schemaVersion" in v))
        diagnostics.push(v as Diagnostic);
      else tools.push(v as ToolDefinition);
    }
    return { ok: true, format: "ndjson", value: { tools, diagnostics } };
  }
  const parsed = parseDocumentText(text);
  if (!parsed.ok) return { ok: false, error: `${file} is not valid JSON or YAML: ${parsed.error}` };
  return { ok: true, format: "document", value: parsed.doc };
}
