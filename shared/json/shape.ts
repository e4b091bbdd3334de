/**
 * Bounds on the shape of untrusted JSON values (request metadata, executor outputs), checked
 * without recursion so that no input can overflow the stack, before anything else walks the value
 * (canonical JSON, JSON.stringify, the projector).
 */

export interface JsonShapeLimits {
  /** Containers nested inside one another, the value itself counting as 1. */
  readonly maxDepth: number;
  /** Object members and array elements, counted together over the whole value. */
  readonly maxMembers: number;
  /** Longest string (values and member names), in UTF-16 code units. */
  readonly maxStringLength: number;
}

/** Which limit a value broke; `limit` is the rule's name, so an answer can name its config key. */
export interface JsonShapeProblem {
  /** RFC 6901 pointer, relative to the checked value. */
  readonly pointer: string;
  readonly rule: "max_depth" | "max_members" | "max_string_length" | "unpaired_surrogate";
  readonly message: string;
}

/**
 * Bounds on a job's output (executor answers and reports): no member or string limit beyond the
 * answer's byte cap, but a depth that every consumer (JSON.stringify, the projector, clients) can
 * walk recursively.
 */
export const OUTPUT_SHAPE_LIMITS: JsonShapeLimits = {
  maxDepth: 64,
  maxMembers: Number.MAX_SAFE_INTEGER,
  maxStringLength: Number.MAX_SAFE_INTEGER,
};

export function escapePointerToken(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** At most this much of a pointer is reported, so a deep value cannot make the answer huge. */
const MAX_POINTER_LENGTH = 200;

function shortPointer(pointer: string): string {
  return pointer.length <= MAX_POINTER_LENGTH
    ? pointer
    : `${pointer.slice(0, MAX_POINTER_LENGTH)}…`;
}

function checkString(
  text: string,
  pointer: string,
  what: string,
  limits: JsonShapeLimits,
): JsonShapeProblem | undefined {
  if (text.length > limits.maxStringLength) {
    return {
      pointer: shortPointer(pointer),
      rule: "max_string_length",
      message: `${what} is ${text.length} characters long; the limit is ${limits.maxStringLength}`,
    };
  }
  if (!text.isWellFormed()) {
    return {
      pointer: shortPointer(pointer),
      rule: "unpaired_surrogate",
      message: `${what} holds an unpaired UTF-16 surrogate, which is not Unicode text (RFC 7493)`,
    };
  }
  return undefined;
}

/**
 * The first way `value` breaks `limits`, or undefined. Strings must also be well-formed Unicode
 * (no unpaired surrogates, RFC 7493 I-JSON), because they leave the hub as UTF-8. Iterative: the
 * work is bounded by `maxMembers` and the depth by `maxDepth`, whatever the input.
 */
export function checkJsonShape(
  value: unknown,
  limits: JsonShapeLimits,
): JsonShapeProblem | undefined {
  const stack: { value: unknown; pointer: string; depth: number }[] = [
    { value, pointer: "", depth: 1 },
  ];
  let members = 0;
  while (stack.length > 0) {
    const item = stack.pop() as { value: unknown; pointer: string; depth: number };
    const current = item.value;
    if (typeof current === "string") {
      const problem = checkString(current, item.pointer, "a string", limits);
      if (problem) return problem;
      continue;
    }
    if (current === null || typeof current !== "object") continue;
    if (item.depth > limits.maxDepth) {
      return {
        pointer: shortPointer(item.pointer),
        rule: "max_depth",
        message: `is nested more than ${limits.maxDepth} levels deep`,
      };
    }
    const isArray = Array.isArray(current);
    const keys = isArray ? undefined : Object.keys(current);
    members += isArray ? current.length : (keys as string[]).length;
    if (members > limits.maxMembers) {
      return {
        pointer: shortPointer(item.pointer),
        rule: "max_members",
        message: `holds more than ${limits.maxMembers} members and elements in all`,
      };
    }
    if (isArray) {
      current.forEach((child, i) => {
        stack.push({ value: child, pointer: `${item.pointer}/${i}`, depth: item.depth + 1 });
      });
      continue;
    }
    const record = current as Record<string, unknown>;
    for (const key of keys as string[]) {
      const pointer = `${item.pointer}/${escapePointerToken(key)}`;
      const problem = checkString(key, pointer, "a member name", limits);
      if (problem) return problem;
      stack.push({ value: record[key], pointer, depth: item.depth + 1 });
    }
  }
  return undefined;
}

/** True when the value holds at least one number (checked iteratively, bounded like the value). */
export function containsNumber(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const current = stack.pop();
    if (typeof current === "number") return true;
    if (current !== null && typeof current === "object") stack.push(...Object.values(current));
  }
  return false;
}

/** The significant decimal digits of a number literal or of a number's shortest form. */
function significantDigits(text: string): string {
  const mantissa = text.replace(/^-/, "").split(/[eE]/)[0] ?? "";
  return mantissa.replace(".", "").replace(/^0+/, "").replace(/0+$/, "");
}

/**
 * True when a JSON number literal survives being read into a JavaScript number (an IEEE 754
 * double): not out of range (1e400 → Infinity, 1e-400 → 0) and no significant digit lost
 * (12345678901234567890 → 12345678901234567000). -0 and 0 are the same number here.
 */
export function numberSurvivesDouble(source: string, value: number): boolean {
  if (!Number.isFinite(value)) return false;
  return significantDigits(source) === significantDigits(String(value));
}

/**
 * Parses JSON text and lists number literals that do not survive as JavaScript numbers (see
 * {@link numberSurvivesDouble}). Uses JSON.parse's source text access, so it costs a second parse;
 * call it only for values that hold numbers.
 */
export function lossyNumbers(text: string): string[] {
  const lossy: string[] = [];
  JSON.parse(text, (_key, value: unknown, context?: { source?: string }) => {
    if (typeof value === "number" && context?.source !== undefined) {
      if (!numberSurvivesDouble(context.source, value)) lossy.push(context.source);
    }
    return value;
  });
  return lossy;
}
