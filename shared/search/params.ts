import type { InvalidRequestError } from "../errors/index.ts";
import type { IndexPosition } from "./types.ts";

/** Builds the 400 of one query parameter. */
export type InvalidParam = (param: string, message: string) => InvalidRequestError;

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i;
const MAX_VALUE_LENGTH = 256;

/** Refuses any query parameter that is not in `known`, naming it. */
export function refuseUnknown(url: URL, known: ReadonlySet<string>, invalid: InvalidParam): void {
  for (const key of url.searchParams.keys()) {
    if (!known.has(key)) throw invalid(key.slice(0, 64), "is not a known parameter");
  }
}

/** The values of a parameter: each non-empty and bounded, at most `max` of them. */
export function queryValues(url: URL, name: string, max: number, invalid: InvalidParam): string[] {
  const values = url.searchParams.getAll(name);
  if (values.length > max) {
    throw invalid(name, max === 1 ? "may be given once" : `may be given at most ${max} times`);
  }
  for (const value of values) {
    if (value === "") throw invalid(name, "must not be empty");
    if (value.length > MAX_VALUE_LENGTH) {
      throw invalid(name, `must be at most ${MAX_VALUE_LENGTH} characters`);
    }
  }
  return values;
}

/** An RFC 3339 time parameter as epoch ms (undefined when absent). */
export function parseTime(url: URL, name: string, invalid: InvalidParam): number | undefined {
  const [value] = queryValues(url, name, 1, invalid);
  if (value === undefined) return undefined;
  const ms = RFC3339.test(value) ? Date.parse(value) : Number.NaN;
  if (!Number.isFinite(ms)) {
    throw invalid(name, "must be an RFC 3339 time such as 2026-01-31T12:00:00Z");
  }
  return ms;
}

/**
 * Headers that say how far behind the stream the index is: the events its consumer still had
 * pending at its last write, and when that was (the indexer writes at least every 5 s).
 */
export function listHeaders(position: IndexPosition, nowMs: number): Record<string, string> {
  return {
    "switchyard-index-lag": String(position.pending),
    "switchyard-index-updated-at": new Date(position.updatedMs || 0).toISOString(),
    "switchyard-index-age-ms": String(
      position.updatedMs > 0 ? Math.max(0, nowMs - position.updatedMs) : -1,
    ),
  };
}
