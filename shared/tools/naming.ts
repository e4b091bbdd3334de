import { createHash } from "node:crypto";
import type { DiagnosticSink } from "./diagnostics.ts";
import { LIMITS } from "./schemas.ts";

const HASH_LENGTH = 8;

/** First 8 hex digits of sha256: short, stable across runs and document order. */
export function shortHash(input: string): string {
  return createHash("sha256").update(input).digest("hex").slice(0, HASH_LENGTH);
}

/** Replaces every character outside [A-Za-z0-9_] and makes the first one a letter or _. */
export function sanitizeName(raw: string): string {
  let name = raw.replace(/[^A-Za-z0-9_]/g, "_");
  if (name === "") return "";
  if (/^[0-9]/.test(name)) name = `_${name}`;
  return name;
}

/** `get /users/{id}/keys` → `get_users_by_id_keys`. */
export function nameFromMethodPath(method: string, path: string): string {
  const parts = path
    .split("/")
    .filter((s) => s !== "")
    .map((s) => {
      const param = /^\{(.+)\}$/.exec(s);
      return param ? `by_${param[1]}` : s;
    });
  const joined = [method.toLowerCase(), ...parts].join("_");
  return sanitizeName(joined).replace(/_+/g, "_").replace(/_$/, "") || method.toLowerCase();
}

/** Appends `_<hash>` and cuts the stem so the whole never exceeds 64 characters. */
export function withHashSuffix(stem: string, key: string): string {
  const room = LIMITS.name - HASH_LENGTH - 1;
  return `${stem.slice(0, room)}_${shortHash(key)}`;
}

/** A tool waiting for its final name. `key` identifies it independently of document order. */
export interface NameCandidate {
  name: string;
  key: string;
  path: string;
  /** The tool's sequence number: its naming diagnostics are grouped with the tool's others. */
  seq: number;
}

/**
 * Makes names valid and unique. Too-long names and every member of a collision group get a
 * hash suffix derived from `key`, so no member "wins" by coming first and reordering a
 * document changes nothing.
 */
export function assignUniqueNames(candidates: NameCandidate[], sink: DiagnosticSink): void {
  for (const c of candidates) {
    if (c.name.length > LIMITS.name) {
      sink.group = c.seq;
      const before = c.name;
      c.name = withHashSuffix(c.name, c.key);
      sink.add(
        "name.truncated",
        c.path,
        `name ${before} has ${before.length} characters; shortened to ${c.name}`,
        "Give the operation a shorter operationId, e.g. with an overlay.",
      );
    }
  }
  const groups = new Map<string, NameCandidate[]>();
  for (const c of candidates) {
    const list = groups.get(c.name);
    if (list) list.push(c);
    else groups.set(c.name, [c]);
  }
  const taken = new Set(candidates.map((c) => c.name));
  for (const [name, members] of groups) {
    if (members.length < 2) continue;
    taken.delete(name);
    for (const m of [...members].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) {
      let next = withHashSuffix(name, m.key);
      // Identical keys (the same operation given twice) still need distinct names.
      for (let i = 2; taken.has(next); i++) next = withHashSuffix(name, `${m.key}#${i}`);
      taken.add(next);
      sink.group = m.seq;
      sink.add(
        "name.collision",
        m.path,
        `name ${name} is used by ${members.length} tools; renamed to ${next}`,
        "Give each operation a distinct operationId.",
      );
      m.name = next;
    }
  }
}
