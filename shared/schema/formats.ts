import { FormatRegistry } from "@sinclair/typebox";
import { isIsoInstant } from "../clock/index.ts";

/** True when the text holds an ASCII control character (U+0000–U+001F, U+007F) or a space. */
function hasControlOrSpace(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 0x20 || c === 0x7f) return true;
  }
  return false;
}

/**
 * Why the text is not an absolute http(s) URL with a host that can be called, or undefined when it
 * is. Spaces and ASCII controls are refused although the WHATWG parser takes them: it drops
 * leading and trailing ones and every tab and newline without a word, so the hub would call
 * another URL than the one it accepted (RFC 3986 has none of them). Port 0 can never be called.
 */
export function httpUrlProblem(text: string): string | undefined {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:") || url.hostname === "") {
    return "must be an absolute http or https URL";
  }
  if (hasControlOrSpace(text)) {
    return "must not contain spaces or control characters (percent-encode them)";
  }
  return url.port === "0" ? "must not use port 0" : undefined;
}

/** True for an absolute http(s) URL with a host (see {@link httpUrlProblem}). */
export function isHttpUrl(text: string): boolean {
  return httpUrlProblem(text) === undefined;
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** What the `date-time` format accepts: RFC 3339's shape, and a time the runtime's Date can read. */
function isDateTimeByParse(text: string): boolean {
  return DATE_TIME.test(text) && !Number.isNaN(Date.parse(text));
}

/**
 * The `date-time` format's check (exported for its equivalence test). Every time the hub writes
 * is in toISOString's shape, which is checked without Date.parse (half of an event's schema check
 * in the 2026-11-29 profiles).
 */
export function isDateTime(text: string): boolean {
  return isIsoInstant(text) || isDateTimeByParse(text);
}

/**
 * TypeBox refuses values of formats it does not know, so the formats our schemas use are
 * registered once here. Imported for its effect by every module that compiles such a schema.
 */
export function registerFormats(): void {
  if (!FormatRegistry.Has("uri")) FormatRegistry.Set("uri", isHttpUrl);
  if (!FormatRegistry.Has("date-time")) {
    FormatRegistry.Set("date-time", isDateTime);
  }
}

registerFormats();
