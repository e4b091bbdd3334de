import { largestTracker } from "./output.ts";
import type { Risk, Source, ToolDefinition } from "./schemas.ts";

export interface ToolSetStats {
  tools: number;
  risk: Record<Risk, number>;
  readonly: number;
  confirmRequired: number;
  sources: Partial<Record<Source, number>>;
  /** What a model sees per tool (name, description, inputSchema), at ~4 characters per token. */
  estimatedTokens: number;
  /** Compact JSON bytes of all tool records. */
  bytes: number;
  /** The largest tools by compact JSON bytes, largest first, with their estimated tokens. */
  largest: { name: string; bytes: number; estimatedTokens: number }[];
  /** Tools whose schema the compiler reduced to fit the tool budget. */
  reduced: number;
}

/** Characters of what a model API receives of a tool. */
function modelChars(t: ToolDefinition): number {
  return JSON.stringify({ name: t.name, description: t.description, input_schema: t.inputSchema })
    .length;
}

/**
 * Counts a tool set. The token estimate serialises the part of each tool a model API receives
 * and divides its length by 4; it is a budget figure, not a tokenizer count.
 */
export function toolSetStats(tools: readonly ToolDefinition[], top = 10): ToolSetStats {
  const s: ToolSetStats = {
    tools: tools.length,
    risk: { low: 0, medium: 0, high: 0 },
    readonly: 0,
    confirmRequired: 0,
    sources: {},
    estimatedTokens: 0,
    bytes: 0,
    largest: [],
    reduced: 0,
  };
  const largest = largestTracker(top);
  const tokens = new Map<string, number>();
  let chars = 0;
  for (const t of tools) {
    s.risk[t.risk]++;
    if (t.readonly) s.readonly++;
    if (t.confirmRequired) s.confirmRequired++;
    if ("x-service-schema-reduced" in t.extensions) s.reduced++;
    s.sources[t.source] = (s.sources[t.source] ?? 0) + 1;
    const n = modelChars(t);
    chars += n;
    tokens.set(t.name, Math.ceil(n / 4));
    const bytes = Buffer.byteLength(JSON.stringify(t));
    s.bytes += bytes;
    largest.add(t.name, bytes);
  }
  s.estimatedTokens = Math.ceil(chars / 4);
  s.largest = largest.list().map((l) => ({ ...l, estimatedTokens: tokens.get(l.name) ?? 0 }));
  return s;
}
