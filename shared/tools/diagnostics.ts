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
 * reported at two severities. The compiler plans every tool before it builds any, so a tool's
 * diagnostics arrive in two rounds; `group` (the tool's sequence number in document order) lets
 * `ordered()` put them back together in document order.
 */
export class DiagnosticSink {
  readonly items: Diagnostic[] = [];
  private readonly groups: number[] = [];
  private readonly reported = new Set<string>();
  /** Group of the diagnostics added next (the compiler sets it to the tool being worked on). */
  group = 0;

  /** `path` is `label#pointer`; it must not be empty (spec 2.5). */
  add(code: DiagnosticCode, path: string, message: string, suggestion?: string): void {
    const [severity] = DIAGNOSTIC_CODES[code];
    const d: Diagnostic = { severity, path: path || "#", code, message: message || code };
    if (suggestion) d.suggestion = suggestion;
    this.push(d);
  }

  /**
   * Like add, but a second report of the same code at the same path is dropped: a schema shared
   * by several definitions or tools is checked at each place it is used, yet it is one problem
   * in the source, so it gets one diagnostic.
   */
  addOnce(code: DiagnosticCode, path: string, message: string, suggestion?: string): void {
    const key = `${code} ${path}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    this.add(code, path, message, suggestion);
  }

  /** Adds diagnostics made elsewhere (loading, validation) to the current group. */
  push(...list: Diagnostic[]): void {
    for (const d of list) {
      this.items.push(d);
      this.groups.push(this.group);
    }
  }

  /** The diagnostics ordered by group, and by arrival within a group. */
  ordered(): Diagnostic[] {
    const index = this.items.map((_, i) => i);
    index.sort((a, b) => (this.groups[a] as number) - (this.groups[b] as number) || a - b);
    return index.map((i) => this.items[i] as Diagnostic);
  }
}

/** A pointer into a labelled document in URI-fragment form: `petstore.yaml#/paths/~1pets`. */
export function docPath(label: string, tokens: readonly (string | number)[]): string {
  return `${label}#${pointer(tokens)}`;
}
