import { type Static, Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { type ValueError, ValueErrorType } from "@sinclair/typebox/value";
import { type FieldError, InvalidRequestError } from "../../shared/errors/index.ts";
import {
  checkJsonShape,
  containsNumber,
  type JsonShapeLimits,
  lossyNumbers,
} from "../../shared/json/index.ts";
import { httpUrlProblem } from "../../shared/schema/index.ts";

const PrincipalSchema = Type.Object(
  { id: Type.String({ minLength: 1 }), tenant: Type.String({ minLength: 1 }) },
  { additionalProperties: true },
);

/** Body of POST /run (spec 2.1). Unknown top-level fields are refused, never stripped. */
export const RunRequestSchema = Type.Object(
  {
    request_id: Type.String({
      minLength: 1,
      maxLength: 255,
      description: "Idempotency key, scoped to the calling client. Reuse it on every retry.",
    }),
    route: Type.String({ minLength: 1, maxLength: 128, description: "Stable route key." }),
    input: Type.String({ description: "Untrusted task text. Never an authorization source." }),
    metadata: Type.Optional(
      Type.Object(
        { principal: Type.Optional(PrincipalSchema) },
        {
          additionalProperties: true,
          description: "Business context; may hold principal {id, tenant}.",
        },
      ),
    ),
    callback_url: Type.Optional(
      Type.String({
        maxLength: 2048,
        format: "uri",
        description: "Absolute http(s) URL that receives the signed completion callback.",
      }),
    ),
  },
  { additionalProperties: false, $id: "RunRequest" },
);

export type RunRequest = Static<typeof RunRequestSchema>;

const KNOWN_FIELDS = new Set(Object.keys(RunRequestSchema.properties));
const checker = TypeCompiler.Compile(RunRequestSchema);

/** Messages for top-level fields people send by mistake. */
const MISPLACED: Readonly<Record<string, string>> = {
  callback:
    "unknown field 'callback': the old spelling is not accepted in Client API v1; use 'callback_url'",
};

function escapePointer(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** The Client API's wording of a schema error, chosen by TypeBox's error type. */
function messageFor(error: ValueError): string {
  switch (error.type) {
    case ValueErrorType.StringFormat:
    case ValueErrorType.StringFormatUnknown:
      if (error.path !== "/callback_url") break;
      return httpUrlProblem(String(error.value)) ?? "must be an absolute http or https URL";
    case ValueErrorType.ObjectRequiredProperty:
      return "is required";
    case ValueErrorType.StringMinLength:
      return "must not be empty";
    case ValueErrorType.StringMaxLength:
      return `must be at most ${String(error.schema.maxLength)} characters`;
    case ValueErrorType.String:
      return "must be a string";
    case ValueErrorType.Object:
      return "must be an object";
  }
  return error.message.charAt(0).toLowerCase() + error.message.slice(1);
}

/** Defaults of server.metadata (docs/config.md). */
export const DEFAULT_METADATA_LIMITS: JsonShapeLimits = {
  maxDepth: 16,
  maxMembers: 256,
  maxStringLength: 4096,
};

/** The config key of each metadata rule, so a refusal names what an operator would change. */
const METADATA_KEYS: Readonly<Record<string, string>> = {
  max_depth: "server.metadata.max_depth",
  max_members: "server.metadata.max_members",
  max_string_length: "server.metadata.max_string_length",
};

export interface RunRequestChecks {
  /** The body's JSON text: number literals are checked against what JavaScript made of them. */
  readonly text?: string;
  readonly metadata?: JsonShapeLimits;
}

function refuse(errors: readonly FieldError[]): InvalidRequestError {
  const first = errors[0] as FieldError;
  return new InvalidRequestError({
    detail: `${first.pointer.slice(1) || "body"}: ${first.message}`,
    errors,
  });
}

/**
 * Checks that JSON Schema cannot say: text is well-formed Unicode, metadata stays within its
 * bounds (depth, members, string length; iteratively, so no depth overflows a stack), and its
 * numbers survive as JavaScript numbers.
 */
function checkContent(body: RunRequest, checks: RunRequestChecks): FieldError | undefined {
  for (const field of ["request_id", "route", "input", "callback_url"] as const) {
    const value = body[field];
    if (value !== undefined && !value.isWellFormed()) {
      return {
        pointer: `/${field}`,
        message: "holds an unpaired UTF-16 surrogate, which is not Unicode text (RFC 7493)",
      };
    }
  }
  if (body.metadata === undefined) return undefined;
  const problem = checkJsonShape(body.metadata, checks.metadata ?? DEFAULT_METADATA_LIMITS);
  if (problem) {
    const key = METADATA_KEYS[problem.rule];
    return {
      pointer: `/metadata${problem.pointer}`,
      message: key ? `${problem.message} (${key})` : problem.message,
    };
  }
  if (checks.text !== undefined && containsNumber(body.metadata)) {
    const lossy = lossyNumbers(checks.text);
    if (lossy.length > 0) {
      return {
        pointer: "/metadata",
        message: `the number ${lossy[0]?.slice(0, 40)} cannot be kept exactly (a 64-bit float holds it as ${String(Number(lossy[0]))}); send it as a string`,
      };
    }
  }
  return undefined;
}

/**
 * Validates a parsed JSON value as a run request. Every problem is reported with a JSON pointer;
 * the first problem's text is the detail.
 */
export function validateRunRequest(value: unknown, checks: RunRequestChecks = {}): RunRequest {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidRequestError({
      detail: "The body must be a JSON object.",
      errors: [{ pointer: "", message: "must be a JSON object" }],
    });
  }
  const errors: FieldError[] = [];
  for (const key of Object.keys(value)) {
    if (!KNOWN_FIELDS.has(key)) {
      errors.push({
        pointer: `/${escapePointer(key)}`,
        message: MISPLACED[key] ?? `unknown field '${key.slice(0, 100)}'`,
      });
    }
  }
  // The compiled check is cheap; the error walk (an iterator over the schema) runs only for bodies
  // that fail, so a valid request pays for one pass.
  if (errors.length === 0 && checker.Check(value)) {
    const problem = checkContent(value as RunRequest, checks);
    if (problem) throw refuse([problem]);
    return value as RunRequest;
  }
  const seen = new Set(errors.map((e) => e.pointer));
  for (const error of checker.Errors(value)) {
    // TypeBox also reports unknown properties; those are already worded above.
    if (seen.has(error.path) || error.path === "") continue;
    seen.add(error.path);
    errors.push({ pointer: error.path, message: messageFor(error) });
  }
  if (errors.length === 0) {
    // Defensive: Check and Errors disagreed; refuse rather than accept unchecked.
    errors.push({ pointer: "", message: "does not match the run request schema" });
  }
  throw refuse(errors);
}
