import type { DiagnosticSink } from "./diagnostics.ts";
import type { ConfirmCondition, HttpMethod, Risk } from "./schemas.ts";
import { CONFIRM_OPS, LIMITS, RISKS } from "./schemas.ts";

/** Behaviour fields of a tool that risk defaults and overrides decide. */
export interface RiskProfile {
  risk: Risk;
  readonly: boolean;
  idempotent: boolean;
  confirmRequired: boolean;
  sensitive: boolean;
  requiresSubject: boolean;
  timeoutMs: number;
  rateLimitPerMin: number;
  confirmPrompt: string;
  confirmWhen?: ConfirmCondition[];
  scope?: string;
  exclude: boolean;
}

export const DEFAULT_TIMEOUT_MS = 30_000;

const MUTATING_WORDS =
  /(^|[^a-z])(delete|remove|cancel|destroy|purge|revoke|terminate|kill|erase|wipe|drop|reset|disable|enable|approve|reject|block|unblock|lock|unlock|suspend|unsubscribe|subscribe|logout|restart|reboot|shutdown|deactivate|activate|execute|trigger|send|transfer|pay|refund|create|update|set|write|rename|move|rerun|retry|dispatch)([^a-z]|$)/;

/** Splits camelCase and separators so "cancelOrder" and "/orders/{id}/cancel" both show "cancel". */
export function looksMutating(path: string, operationId?: string): boolean {
  const words = `${path} ${operationId ?? ""}`
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .replace(/\{[^}]*\}/g, " ");
  return MUTATING_WORDS.test(words);
}

/** Risk defaults from the HTTP method alone (docs/tools.md "Risk defaults"). */
export function methodDefaults(method: HttpMethod): RiskProfile {
  const safe = method === "GET" || method === "HEAD" || method === "OPTIONS";
  const risk: Risk = safe ? "low" : method === "DELETE" ? "high" : "medium";
  return {
    risk,
    readonly: safe,
    idempotent: safe || method === "PUT" || method === "DELETE",
    confirmRequired: risk === "high",
    sensitive: false,
    requiresSubject: false,
    timeoutMs: DEFAULT_TIMEOUT_MS,
    rateLimitPerMin: 0,
    confirmPrompt: "",
    exclude: false,
  };
}

/** Names of the x-service-* overrides read from an operation (or added by an overlay). */
export const OVERRIDE_KEYS = [
  "x-service-risk",
  "x-service-readonly",
  "x-service-idempotent",
  "x-service-sensitive",
  "x-service-requiresSubject",
  "x-service-confirmRequired",
  "x-service-scope",
  "x-service-timeoutMs",
  "x-service-rateLimitPerMin",
  "x-service-confirmPrompt",
  "x-service-confirmWhen",
  "x-service-exclude",
] as const;

function isCondition(v: unknown): v is ConfirmCondition {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!["param", "op", "value", "label"].includes(k)) return false;
  if (typeof o.param !== "string" || o.param.length < 1 || o.param.length > LIMITS.param)
    return false;
  if (typeof o.op !== "string" || !(CONFIRM_OPS as readonly string[]).includes(o.op)) return false;
  if (
    "label" in o &&
    (typeof o.label !== "string" || o.label.length < 1 || o.label.length > LIMITS.label)
  )
    return false;
  return true;
}

/**
 * Applies x-service-* overrides. A wrong-typed value is reported and ignored rather than
 * coerced, because a silently reinterpreted risk flag is worse than the default.
 */
export function applyOverrides(
  base: RiskProfile,
  ext: Record<string, unknown>,
  path: string,
  sink: DiagnosticSink,
): RiskProfile {
  const p: RiskProfile = { ...base };
  const bad = (key: string, expected: string) =>
    sink.add("override.invalid", `${path}/${key}`, `${key} must be ${expected}; ignored`);
  const bool = (key: string, apply: (v: boolean) => void) => {
    if (!(key in ext)) return;
    const v = ext[key];
    if (typeof v === "boolean") apply(v);
    else bad(key, "a boolean");
  };
  let riskSet = false;
  if ("x-service-risk" in ext) {
    const v = ext["x-service-risk"];
    if (typeof v === "string" && (RISKS as readonly string[]).includes(v)) {
      p.risk = v as Risk;
      riskSet = true;
    } else bad("x-service-risk", "one of low, medium, high");
  }
  bool("x-service-readonly", (v) => {
    p.readonly = v;
    if (v && !riskSet) p.risk = "low";
  });
  bool("x-service-idempotent", (v) => {
    p.idempotent = v;
  });
  bool("x-service-sensitive", (v) => {
    p.sensitive = v;
  });
  bool("x-service-requiresSubject", (v) => {
    p.requiresSubject = v;
  });
  bool("x-service-exclude", (v) => {
    p.exclude = v;
  });
  p.confirmRequired = p.risk === "high";
  bool("x-service-confirmRequired", (v) => {
    p.confirmRequired = v;
  });
  if ("x-service-scope" in ext) {
    const v = ext["x-service-scope"];
    if (typeof v === "string" && v.length >= 1 && v.length <= LIMITS.scope) p.scope = v;
    else bad("x-service-scope", "a string of 1 to 191 characters");
  }
  if ("x-service-timeoutMs" in ext) {
    const v = ext["x-service-timeoutMs"];
    if (Number.isInteger(v) && (v as number) >= 0 && (v as number) <= LIMITS.timeoutMs)
      p.timeoutMs = v as number;
    else bad("x-service-timeoutMs", "an integer from 0 to 60000");
  }
  if ("x-service-rateLimitPerMin" in ext) {
    const v = ext["x-service-rateLimitPerMin"];
    if (Number.isInteger(v) && (v as number) >= 0) p.rateLimitPerMin = v as number;
    else bad("x-service-rateLimitPerMin", "an integer of at least 0");
  }
  if ("x-service-confirmPrompt" in ext) {
    const v = ext["x-service-confirmPrompt"];
    if (typeof v === "string" && v.length <= LIMITS.confirmPrompt) p.confirmPrompt = v;
    else bad("x-service-confirmPrompt", "a string of at most 200 characters");
  }
  if ("x-service-confirmWhen" in ext) {
    const v = ext["x-service-confirmWhen"];
    if (Array.isArray(v) && v.length <= LIMITS.confirmWhen && v.every(isCondition))
      p.confirmWhen = v;
    else bad("x-service-confirmWhen", "an array of at most 20 confirmCondition objects");
  }
  return p;
}
