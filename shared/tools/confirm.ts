import { deepEqual, isObject } from "./schema-merge.ts";
import type { ConfirmCondition } from "./schemas.ts";

/** The caller on whose behalf a tool runs (run request metadata.principal). */
export interface Principal {
  id?: string;
  tenant?: string;
}

export interface ConfirmationDecision {
  required: boolean;
  /** Labels of the conditions that hold (or a generated text when a condition has no label). */
  reasons: string[];
}

const ABSENT = Symbol("absent");

/**
 * Reads `param` from the arguments. An exact top-level key wins; otherwise the name is a
 * dotted path through objects and arrays ("items.0.amount").
 */
export function readParam(args: unknown, param: string): unknown {
  if (isObject(args) && Object.hasOwn(args, param)) return args[param];
  let cur: unknown = args;
  for (const part of param.split(".")) {
    if (Array.isArray(cur) && /^(0|[1-9][0-9]*)$/.test(part) && Number(part) < cur.length)
      cur = cur[Number(part)];
    else if (isObject(cur) && Object.hasOwn(cur, part)) cur = cur[part];
    else return ABSENT;
  }
  return cur;
}

function isNumber(v: unknown): v is number {
  return typeof v === "number" && Number.isFinite(v);
}

function isEmpty(v: unknown): boolean {
  if (v === null || v === "") return true;
  if (Array.isArray(v)) return v.length === 0;
  if (isObject(v)) return Object.keys(v).length === 0;
  return false;
}

/**
 * Whether one condition holds. Rules (docs/tools.md "Confirmation rules"):
 * - An absent argument satisfies only nothing, except the subject/tenant ops, which need a
 *   principal first: without principal.id / principal.tenant they always hold.
 * - Numeric ops (> >= < <= == !=) compare numbers only. A present argument or a condition
 *   value that is not a number makes the condition hold: confirmation fails closed.
 * - equals / not_equals use deep JSON equality; in / not_in need an array value (otherwise the
 *   condition holds, again failing closed).
 */
export function conditionHolds(
  c: ConfirmCondition,
  args: unknown,
  principal: Principal | undefined,
): boolean {
  const v = readParam(args, c.param);
  const present = v !== ABSENT && v !== undefined;
  switch (c.op) {
    case ">":
    case ">=":
    case "<":
    case "<=":
    case "==":
    case "!=": {
      if (!present) return false;
      if (!isNumber(v) || !isNumber(c.value)) return true;
      if (c.op === ">") return v > c.value;
      if (c.op === ">=") return v >= c.value;
      if (c.op === "<") return v < c.value;
      if (c.op === "<=") return v <= c.value;
      if (c.op === "==") return v === c.value;
      return v !== c.value;
    }
    case "equals":
      return present && deepEqual(v, c.value);
    case "not_equals":
      return present && !deepEqual(v, c.value);
    case "in":
    case "not_in": {
      if (!present) return false;
      if (!Array.isArray(c.value)) return true;
      const found = c.value.some((x) => deepEqual(x, v));
      return c.op === "in" ? found : !found;
    }
    case "exists":
      return present;
    case "not_empty":
      return present && !isEmpty(v);
    case "equals_subject":
    case "not_equals_subject":
    case "equals_subject_tenant":
    case "not_equals_subject_tenant": {
      const field = c.op.endsWith("_tenant") ? principal?.tenant : principal?.id;
      if (typeof field !== "string" || field === "") return true;
      if (!present) return false;
      const same = v === field;
      return c.op.startsWith("equals") ? same : !same;
    }
    default:
      // An op outside the enum comes from an unvalidated record: ask rather than guess.
      return true;
  }
}

function describe(c: ConfirmCondition): string {
  if (typeof c.label === "string" && c.label !== "") return c.label;
  return c.value === undefined
    ? `${c.param} ${c.op}`
    : `${c.param} ${c.op} ${JSON.stringify(c.value)}`;
}

/**
 * Decides whether a call needs human confirmation. confirmRequired always requires it; each
 * confirmWhen condition that holds adds its label to `reasons`. Never throws: a malformed tool
 * or condition requires confirmation.
 */
export function evaluateConfirmation(
  tool: unknown,
  args: unknown,
  principal?: unknown,
): ConfirmationDecision {
  const reasons: string[] = [];
  try {
    if (!isObject(tool))
      return { required: true, reasons: ["tool definition is missing or malformed"] };
    const p: Principal | undefined = isObject(principal)
      ? {
          ...(typeof principal.id === "string" ? { id: principal.id } : {}),
          ...(typeof principal.tenant === "string" ? { tenant: principal.tenant } : {}),
        }
      : undefined;
    if (tool.confirmRequired !== false) {
      reasons.push(
        tool.confirmRequired === true
          ? typeof tool.confirmPrompt === "string" && tool.confirmPrompt !== ""
            ? tool.confirmPrompt
            : "this tool always requires confirmation"
          : "confirmRequired is not a boolean",
      );
    }
    const list = tool.confirmWhen;
    if (list !== undefined && !Array.isArray(list)) reasons.push("confirmWhen is malformed");
    if (Array.isArray(list)) {
      for (const raw of list) {
        if (!isObject(raw) || typeof raw.param !== "string" || typeof raw.op !== "string") {
          reasons.push("a confirmWhen condition is malformed");
          continue;
        }
        const c = raw as unknown as ConfirmCondition;
        if (conditionHolds(c, args, p)) reasons.push(describe(c));
      }
    }
  } catch {
    reasons.push("confirmation could not be evaluated");
  }
  return { required: reasons.length > 0, reasons };
}
