/**
 * Schema errors in words an operator can act on: the key that is wrong and what is allowed
 * there. TypeBox reports a misspelled executor kind as "expected union value", a misspelled
 * builtin name as a missing field of that kind, and an unknown key as "unexpected property".
 */
import type { TSchema } from "@sinclair/typebox";
import { Value, type ValueError, ValueErrorType } from "@sinclair/typebox/value";

/** A config problem: the dotted key it is about, and what is wrong. */
export interface ConfigIssue {
  readonly key: string;
  readonly message: string;
}

/** "/clients/0/token_sha256/1" → "clients[0].token_sha256[1]". */
export function pointerToKey(pointer: string): string {
  if (pointer === "") return "(root)";
  return pointer
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce(
      (key, part) => (/^\d+$/.test(part) ? `${key}[${part}]` : key ? `${key}.${part}` : part),
      "",
    );
}

const quote = (value: unknown) => JSON.stringify(value) ?? String(value);

/** Edit distance with swapped neighbours as one edit ("ecoh" → "echo"); keys and names are short. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => (d[i] as number[])[j] as number;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, at(i - 2, j - 2) + 1);
      }
      (d[i] as number[])[j] = best;
    }
  }
  return at(a.length, b.length);
}

/** ` (did you mean 'executor'?)` when one allowed word is close to the given one. */
function suggestion(given: unknown, allowed: readonly string[]): string {
  if (typeof given !== "string") return "";
  const [best] = allowed
    .map((word) => ({ word, d: distance(given.toLowerCase(), word.toLowerCase()) }))
    .filter((c) => c.d <= Math.max(1, Math.floor(c.word.length / 3)))
    .sort((x, y) => x.d - y.d);
  return best ? ` (did you mean '${best.word}'?)` : "";
}

/** The values of a union of literals ("echo" | "sleep"); undefined for other unions. */
function literalsOf(members: readonly TSchema[]): unknown[] | undefined {
  return members.every((m) => "const" in m) ? members.map((m) => m.const) : undefined;
}

/** The property that tells a union's object members apart (`kind` of an executor). */
function discriminatorOf(members: readonly TSchema[]): string | undefined {
  const [first] = members;
  const keys = Object.keys((first?.properties ?? {}) as Record<string, TSchema>);
  return keys.find((key) =>
    members.every((m) => (m.properties as Record<string, TSchema> | undefined)?.[key]?.const),
  );
}

function unionIssues(error: ValueError, members: readonly TSchema[]): ConfigIssue[] {
  const key = pointerToKey(error.path);
  const literals = literalsOf(members);
  if (literals) {
    const allowed = literals.map(String);
    const got = error.value === undefined ? "is required" : `${quote(error.value)} is not allowed`;
    return [
      {
        key,
        message: `${got}; one of: ${allowed.join(", ")}${suggestion(error.value, allowed)}`,
      },
    ];
  }
  const discriminator = discriminatorOf(members);
  const value = error.value;
  if (discriminator && value !== null && typeof value === "object" && !Array.isArray(value)) {
    const given = (value as Record<string, unknown>)[discriminator];
    const consts = members.map((m) => (m.properties as Record<string, TSchema>)[discriminator]);
    const allowed = consts.map((c) => String(c?.const));
    const member = members[allowed.indexOf(String(given))];
    if (given === undefined || member === undefined) {
      const what = given === undefined ? "is required" : `${quote(given)} is not allowed`;
      const message = `${what}; one of: ${allowed.join(", ")}${suggestion(given, allowed)}`;
      return [{ key: pointerToKey(`${error.path}/${discriminator}`), message }];
    }
    // The member of that kind, with its defaults: its own problems, at their own keys.
    const withDefaults = Value.Default(member, Value.Clone(value));
    return [...Value.Errors(member, withDefaults)].flatMap((inner) =>
      schemaIssues({ ...inner, path: `${error.path}${inner.path}` }),
    );
  }
  if (value === undefined) return [{ key, message: "is required" }];
  // A plain entry or one with retire_at: describe the member of the value's type.
  const same = members.find((m) => m.type === typeof value);
  const inner = same ? Value.Errors(same, value).First() : undefined;
  if (!inner) return [{ key, message: "has a type that is not allowed here" }];
  return schemaIssues({ ...inner, path: `${error.path}${inner.path}` });
}

/** The issues one schema error stands for, each at the key it names. */
export function schemaIssues(error: ValueError): ConfigIssue[] {
  const key = pointerToKey(error.path);
  const schema = error.schema;
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    const allowed = Object.keys((schema.properties ?? {}) as Record<string, unknown>);
    const name = error.path.split("/").pop()?.replace(/~1/g, "/").replace(/~0/g, "~");
    return [
      {
        key,
        message: `unknown key${suggestion(name, allowed)}; allowed here: ${allowed.join(", ")}`,
      },
    ];
  }
  if (error.type === ValueErrorType.ObjectRequiredProperty)
    return [{ key, message: "is required" }];
  const members: unknown = schema.anyOf;
  if (Array.isArray(members)) return unionIssues(error, members as TSchema[]);
  if (typeof schema.pattern === "string") return [{ key, message: `must match ${schema.pattern}` }];
  return [{ key, message: error.message.charAt(0).toLowerCase() + error.message.slice(1) }];
}
