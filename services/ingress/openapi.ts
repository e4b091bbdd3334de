import { type TSchema, Type } from "@sinclair/typebox";
import { JOB_STATUSES } from "../../shared/domain/index.ts";
import { RunRequestSchema } from "./run-request.ts";

const nullableless = (schema: TSchema) => JSON.parse(JSON.stringify(schema)) as unknown;

const JobErrorSchema = Type.Object(
  {
    code: Type.String(),
    message: Type.String(),
    cancelled_by: Type.Optional(
      Type.Object(
        {
          kind: Type.Union([Type.Literal("client"), Type.Literal("operator")]),
          id: Type.String(),
        },
        { additionalProperties: false, description: "Who cancelled the job (code cancelled)." },
      ),
    ),
  },
  { additionalProperties: false },
);

/** The job record of GET /jobs/{job_id}, also the body of POST /run's 202 and 200. */
export const JobResourceSchema = Type.Object(
  {
    job_id: Type.String({ pattern: "^job_[A-Za-z0-9_-]{22}$" }),
    request_id: Type.String(),
    route: Type.String(),
    status: Type.Union(JOB_STATUSES.map((s) => Type.Literal(s))),
    created_at: Type.String({ format: "date-time" }),
    updated_at: Type.String({ format: "date-time" }),
    completed_at: Type.Optional(Type.String({ format: "date-time" })),
    output: Type.Optional(Type.Unknown({ description: "Executor result; present when done." })),
    error: Type.Optional(JobErrorSchema),
    callback: Type.Optional(
      Type.Object(
        {
          status: Type.Union([
            Type.Literal("pending"),
            Type.Literal("delivered"),
            Type.Literal("failed"),
          ]),
          attempts: Type.Integer({ minimum: 0 }),
          last_attempt_at: Type.Optional(Type.String({ format: "date-time" })),
          next_attempt_at: Type.Optional(Type.String({ format: "date-time" })),
        },
        { additionalProperties: false },
      ),
    ),
    retry_of: Type.Optional(Type.String({ description: "This job retries that one." })),
    retried_as: Type.Optional(Type.String({ description: "This job was retried as that one." })),
  },
  { additionalProperties: false },
);

const JobPageSchema = Type.Object(
  {
    jobs: Type.Array(Type.Unknown({ $ref: "#/components/schemas/Job" })),
    next_cursor: Type.Union([Type.String(), Type.Null()], {
      description: "Pass as `cursor` for the next page; null on the last page.",
    }),
  },
  { additionalProperties: false },
);

const ProblemSchema = Type.Object(
  {
    type: Type.String({ format: "uri" }),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: "Stable machine-readable code; see docs/errors.md." }),
    instance: Type.Optional(Type.String()),
    errors: Type.Optional(
      Type.Array(
        Type.Object(
          {
            pointer: Type.String({ description: "RFC 6901 JSON pointer into the body." }),
            message: Type.String(),
          },
          { additionalProperties: false },
        ),
      ),
    ),
  },
  { additionalProperties: false },
);

const problem = (description: string, headers?: Record<string, unknown>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
});
const retryAfter = {
  "Retry-After": { schema: { type: "integer" }, description: "Seconds to wait." },
};
const job = (description: string) => ({
  description,
  headers: { Location: { schema: { type: "string" } } },
  content: { "application/json": { schema: { $ref: "#/components/schemas/Job" } } },
});

/** The OpenAPI 3.1 description of Client API v1, built from the same TypeBox schemas the code checks. */
export function buildOpenApiDocument(): Record<string, unknown> {
  return {
    openapi: "3.1.0",
    info: {
      title: "Switchyard Client API",
      version: "1.0.0",
      description:
        "Submit a routed task, poll its job, receive a signed completion callback. See docs/api.md.",
    },
    servers: [{ url: "/" }],
    security: [{ bearer: [] }],
    paths: {
      "/run": {
        post: {
          operationId: "submitRun",
          summary: "Submit a run (idempotent per client and request_id)",
          parameters: [
            { name: "traceparent", in: "header", required: false, schema: { type: "string" } },
          ],
          requestBody: {
            required: true,
            content: {
              "application/json": { schema: { $ref: "#/components/schemas/RunRequest" } },
            },
          },
          responses: {
            "202": job("A new job was created."),
            "200": job("The same request_id with the same body was seen before: the existing job."),
            "400": problem(
              "Invalid body: unknown field, wrong type, malformed JSON, refused callback_url.",
            ),
            "401": problem("Missing or invalid bearer token."),
            "403": problem(
              "The route is unknown or not allowed for this client (one answer for both).",
            ),
            "409": problem("The request_id was used before with a different body."),
            "413": problem("The body is larger than the limit."),
            "415": problem("Content-Type is not application/json."),
            "429": problem("Client rate limit reached.", retryAfter),
            "503": problem(
              "The event store is unreachable or full; nothing was persisted.",
              retryAfter,
            ),
          },
        },
      },
      "/jobs": {
        get: {
          operationId: "listJobs",
          summary: "List this client's jobs, newest first (from the search index)",
          parameters: [
            {
              name: "status",
              in: "query",
              required: false,
              schema: { type: "array", items: { type: "string", enum: [...JOB_STATUSES] } },
              style: "form",
              explode: true,
            },
            {
              name: "route",
              in: "query",
              required: false,
              schema: { type: "array", items: { type: "string" } },
              style: "form",
              explode: true,
            },
            {
              name: "created_after",
              in: "query",
              required: false,
              schema: { type: "string", format: "date-time" },
              description: "created_at at or after (RFC 3339).",
            },
            {
              name: "created_before",
              in: "query",
              required: false,
              schema: { type: "string", format: "date-time" },
              description: "created_at before (RFC 3339).",
            },
            {
              name: "limit",
              in: "query",
              required: false,
              schema: { type: "integer", minimum: 1, maximum: 500, default: 50 },
            },
            {
              name: "cursor",
              in: "query",
              required: false,
              schema: { type: "string" },
              description: "next_cursor of the previous page.",
            },
          ],
          responses: {
            "200": {
              description:
                "One page. Switchyard-Index-Lag, Switchyard-Index-Updated-At and Switchyard-Index-Age-Ms say how far behind the stream the index is.",
              headers: {
                "Switchyard-Index-Lag": {
                  schema: { type: "integer" },
                  description: "Events the indexer still had to write at its last write.",
                },
                "Switchyard-Index-Updated-At": {
                  schema: { type: "string", format: "date-time" },
                  description: "When the index last wrote (the epoch when it never has).",
                },
                "Switchyard-Index-Age-Ms": {
                  schema: { type: "integer", minimum: -1 },
                  description:
                    "Milliseconds since that write; -1 when it never wrote. It writes at least every 5 s, so more means the indexer is not running.",
                },
              },
              content: { "application/json": { schema: { $ref: "#/components/schemas/JobPage" } } },
            },
            "400": problem("A bad or unknown query parameter (named in errors)."),
            "401": problem("Missing or invalid bearer token."),
            "404": problem("Listing is not enabled on this hub (index.enabled is false)."),
            "429": problem("Client rate limit reached.", retryAfter),
            "503": problem(
              "The search index cannot answer now (its database is unreachable).",
              retryAfter,
            ),
          },
        },
      },
      "/jobs/{job_id}/cancel": {
        post: {
          operationId: "cancelJob",
          summary: "Cancel a job that is not final (no body)",
          parameters: [{ name: "job_id", in: "path", required: true, schema: { type: "string" } }],
          requestBody: {
            required: false,
            description:
              "None, or `{}` for clients that always send one; no Content-Type needed. Read up to server.max_body_bytes like every body.",
            content: {
              "application/json": {
                schema: { type: "object", maxProperties: 0, additionalProperties: false },
              },
            },
          },
          responses: {
            "202": {
              description:
                "Cancelled now: the job ended as error `cancelled`; the executor is being told.",
              content: { "application/json": { schema: { $ref: "#/components/schemas/Job" } } },
            },
            "200": {
              description: "It had been cancelled before.",
              content: { "application/json": { schema: { $ref: "#/components/schemas/Job" } } },
            },
            "400": problem("A body other than none or `{}`."),
            "401": problem("Missing or invalid bearer token."),
            "404": problem("No such job for this client (also for other clients' jobs)."),
            "409": problem("job_final: the job already ended otherwise."),
            "413": problem("The body is larger than the limit (server.max_body_bytes)."),
            "429": problem("Client rate limit reached.", retryAfter),
            "503": problem("The event store is unreachable.", retryAfter),
          },
        },
      },
      "/jobs/{job_id}": {
        get: {
          operationId: "getJob",
          summary: "Read a job",
          parameters: [{ name: "job_id", in: "path", required: true, schema: { type: "string" } }],
          responses: {
            "200": {
              description: "The job.",
              content: { "application/json": { schema: { $ref: "#/components/schemas/Job" } } },
            },
            "401": problem("Missing or invalid bearer token."),
            "404": problem("No such job for this client (also for other clients' jobs)."),
            "429": problem("Client rate limit reached.", retryAfter),
            "503": problem("The event store is unreachable.", retryAfter),
          },
        },
      },
    },
    components: {
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      schemas: {
        RunRequest: nullableless(RunRequestSchema),
        Job: nullableless(JobResourceSchema),
        JobPage: nullableless(JobPageSchema),
        Problem: nullableless(ProblemSchema),
      },
    },
  };
}
