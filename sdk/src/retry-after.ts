/**
 * Parses a Retry-After value (RFC 9110): delay-seconds or an HTTP-date. Returns whole seconds
 * from `nowMs` (never negative), or undefined when absent or malformed.
 */
export function parseRetryAfter(
  value: string | null | undefined,
  nowMs: number,
): number | undefined {
  if (value == null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) {
    const seconds = Number(text);
    return Number.isSafeInteger(seconds) ? seconds : undefined;
  }
  // Date.parse accepts bare numbers and other junk, so require a date-looking value with a weekday/month.
  if (!/^[A-Za-z]{3}/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, Math.ceil((at - nowMs) / 1000));
}
