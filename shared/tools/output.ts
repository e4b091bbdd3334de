import type { CompiledTool } from "./compile.ts";
import type { Diagnostic } from "./schemas.ts";

/** Where compile output goes; a returned promise is awaited (backpressure). */
export type WriteChunk = (chunk: string) => void | Promise<void>;

/** The output formats of `switchyard tools compile`. */
export type OutputFormat = "json" | "ndjson";

/** What was written, for the summary line and `tools stats`. */
export interface WrittenSummary {
  tools: number;
  /** Compact JSON bytes of all tools (what the output budget counts). */
  toolBytes: number;
  /** The largest tools, largest first (at most `keepLargest`). */
  largest: { name: string; bytes: number }[];
}

/** Keeps the n largest tools seen. */
export function largestTracker(n: number): {
  add(name: string, bytes: number): void;
  list(): { name: string; bytes: number }[];
} {
  const top: { name: string; bytes: number }[] = [];
  return {
    add(name, bytes) {
      if (top.length === n && (top[n - 1] as { bytes: number }).bytes >= bytes) return;
      top.push({ name, bytes });
      top.sort((a, b) => b.bytes - a.bytes || (a.name < b.name ? -1 : 1));
      if (top.length > n) top.pop();
    },
    list: () => [...top],
  };
}

/** `JSON.stringify(value, null, 2)` placed as an item of a top-level member array. */
function indentedItem(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(/^/gm, "    ");
}

/**
 * Writes tools as they come, then the diagnostics. "json" is byte-identical to
 * `JSON.stringify({ tools, diagnostics }, null, 2) + "\n"`; "ndjson" writes one tool definition
 * per line, then one diagnostic per line (a line with `schemaVersion` is a tool, one with
 * `severity` a diagnostic). Either way only one tool is held at a time. `diagnostics` is called
 * after the last tool, when the compile has reported everything.
 */
export async function writeCompileOutput(opts: {
  tools: Iterable<CompiledTool>;
  diagnostics: () => readonly Diagnostic[];
  format: OutputFormat;
  write: WriteChunk;
  keepLargest?: number;
  onTool?: (count: number) => void;
}): Promise<WrittenSummary> {
  const { write, format } = opts;
  const largest = largestTracker(opts.keepLargest ?? 10);
  let count = 0;
  let toolBytes = 0;
  if (format === "json") await write('{\n  "tools": [');
  for (const { tool, json } of opts.tools) {
    const bytes = Buffer.byteLength(json);
    toolBytes += bytes;
    largest.add(tool.name, bytes);
    if (format === "ndjson") await write(`${json}\n`);
    else await write(`${count === 0 ? "\n" : ",\n"}${indentedItem(tool)}`);
    count++;
    opts.onTool?.(count);
  }
  const diagnostics = opts.diagnostics();
  if (format === "ndjson") {
    for (const d of diagnostics) await write(`${JSON.stringify(d)}\n`);
  } else {
    await write(count === 0 ? '],\n  "diagnostics": [' : '\n  ],\n  "diagnostics": [');
    let first = true;
    for (const d of diagnostics) {
      await write(`${first ? "\n" : ",\n"}${indentedItem(d)}`);
      first = false;
    }
    await write(diagnostics.length === 0 ? "]\n}\n" : "\n  ]\n}\n");
  }
  return { tools: count, toolBytes, largest: largest.list() };
}
