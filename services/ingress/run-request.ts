import { type Static, Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { ValueError } from "@sinclair/typebox/value";
import { type FieldError, InvalidRequestError } from "../../shared/errors/index.ts";
import "../../shared/schema/formats.ts";

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

function messageFor(error: ValueError): string {
  if (error.path === "/callback_url" && error.message.includes("format")) {
    return "must be an absolute http or https URL";
  }
  if (error.message.startsWith("Expected required property")) return "is required";
  if (error.message.startsWith("Expected string length greater or equal"))
    return "must not be empty";
  if (error.message.startsWith("Expected string length less or equal")) {
    return `must be at most ${String(error.schema.maxLength)} characters`;
  }
  if (error.message.startsWith("Expected string")) return "must be a string";
  if (error.message.startsWith("Expected object")) return "must be an object";
  return error.message.charAt(0).toLowerCase() + error.message.slice(1);
}

/**
 * Validates a parsed JSON value as a run request. Every problem is reported with a JSON pointer;
 * the first problem's text is the detail.
 */
export function validateRunRequest(value: unknown): RunRequest {
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
        message: MISPLACED[key] ?? `unknown field '${key}'`,
      });
    }
  }
  // The compiled check is cheap; the error walk (an iterator over the schema) runs only for bodies
  // that fail, so a valid request pays for one pass.
  if (errors.length === 0 && checker.Check(value)) return value as RunRequest;
  const seen = new Set(errors.map((e) => e.pointer));
  for (const error of checker.Errors(value)) {
    // TypeBox also reports unknown properties; those are already worded above.
    if (seen.has(error.path) || error.path === "") continue;
    seen.add(error.path);
    errors.push({ pointer: error.path, message: messageFor(error) });
  }
  const body = value as RunRequest;
  if (errors.length > 0) {
    const first = errors[0] as FieldError;
    throw new InvalidRequestError({
      detail: `${first.pointer.slice(1) || "body"}: ${first.message}`,
      errors,
    });
  }
  return body;
}
