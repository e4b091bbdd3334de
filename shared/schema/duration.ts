const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Pattern of a duration in config: an integer and a unit, e.g. 500ms, 15s, 2m, 30d. */
export const DURATION_PATTERN = "^[0-9]+(ms|s|m|h|d)$";

/** Parses "30d", "2m", "500ms" to milliseconds. The schema has checked the pattern already. */
export function parseDuration(text: string): number {
  const match = /^([0-9]+)(ms|s|m|h|d)$/.exec(text);
  if (!match?.[1] || !match[2]) throw new Error(`not a duration: ${text}`);
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}
