import { DIAGNOSTIC_CODES, type DiagnosticCode } from "./codes.ts";
import type { Diagnostic } from "./schemas.ts";

/** RFC 6901 escaping of one reference token. */
export function escapePointerToken(token: string | number): string {
  return String(token).replaceAll("~", "~0").replaceAll("/", "~1");
}

/** Builds a JSON pointer from tokens ("" for the root). */
export function pointer(tokens: readonly (string | number)[]): string {
  return tokens.map((t) => `/${escapePointerToken(t)}`).join("");
}

/**
 * Collects diagnostics with the severity fixed by the code table, so a code can never be
 * reported at two severities.
 */
export class DiagnosticSink {
  readonly items: Diagnostic[] = [];

  /** `path` is `label#pointer`; it must not be empty (spec 2.5). */
  add(code: DiagnosticCode, path: string, message: string, suggestion?: string): void {
    const [severity] = DIAGNOSTIC_CODES[code];
    const d: Diagnostic = { severity, path: path || "#", code, message: message || code };
    if (suggestion) d.suggestion = suggestion;
    this.items.push(d);
  }
}

/** A pointer into a labelled document in URI-fragment form: `petstore.yaml#/paths/~1pets`. */
export function docPath(label: string, tokens: readonly (string | number)[]): string {
  return `${label}#${pointer(tokens)}`;
}
