import type { Risk, Source, ToolDefinition } from "./schemas.ts";

export interface ToolSetStats {
  tools: number;
  risk: Record<Risk, number>;
  readonly: number;
  confirmRequired: number;
  sources: Partial<Record<Source, number>>;
  /** What a model sees per tool (name, description, inputSchema), at ~4 characters per token. */
  estimatedTokens: number;
}

/**
 * Counts a tool set. The token estimate serialises the part of each tool a model API receives
 * and divides its length by 4; it is a budget figure, not a tokenizer count.
 */
export function toolSetStats(tools: readonly ToolDefinition[]): ToolSetStats {
  const s: ToolSetStats = {
    tools: tools.length,
    risk: { low: 0, medium: 0, high: 0 },
    readonly: 0,
    confirmRequired: 0,
    sources: {},
    estimatedTokens: 0,
  };
  let chars = 0;
  for (const t of tools) {
    s.risk[t.risk]++;
    if (t.readonly) s.readonly++;
    if (t.confirmRequired) s.confirmRequired++;
    s.sources[t.source] = (s.sources[t.source] ?? 0) + 1;
    chars += JSON.stringify({
      name: t.name,
      description: t.description,
      input_schema: t.inputSchema,
    }).length;
  }
  s.estimatedTokens = Math.ceil(chars / 4);
  return s;
}
