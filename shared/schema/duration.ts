const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** Pattern of a duration in config: an integer and a unit, e.g. 500ms, 15s, 2m, 30d. */
export const DURATION_PATTERN = "^[0-9]+(ms|s|m|h|d)$";

/**
 * Durations parsed so far. They come from config (a route's deadline is read for every job the
 * executor admits), so there are few; the bound keeps any other caller from growing it.
 */
const parsed = new Map<string, number>();
const PARSED_LIMIT = 256;

/** Parses "30d", "2m", "500ms" to milliseconds. The schema has checked the pattern already. */
export function parseDuration(text: string): number {
  const known = parsed.get(text);
  if (known !== undefined) return known;
  const match = /^([0-9]+)(ms|s|m|h|d)$/.exec(text);
  if (!match?.[1] || !match[2]) throw new Error(`not a duration: ${text}`);
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (parsed.size < PARSED_LIMIT) parsed.set(text, ms);
  return ms;
}
