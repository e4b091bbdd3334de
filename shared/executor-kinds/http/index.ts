import { type Static, Type } from "@sinclair/typebox";
import { DURATION_PATTERN, parseDuration } from "../../schema/index.ts";
import { webhookSecretProblem } from "../../webhooks/index.ts";
import type { ExecutorKindDescriptor, KindIssue } from "../descriptor.ts";

/** An HTTP executor: tasks are POSTed, signed with Standard Webhooks (docs/executors.md). */
export const HttpExecutorSchema = Type.Object(
  {
    kind: Type.Literal("http"),
    url: Type.String({ pattern: "^https?://", maxLength: 2048 }),
    /** Signing secret of the task POSTs, `whsec_…`; keep it in the environment (`${ENV}`). */
    secret: Type.String({ pattern: "^whsec_[A-Za-z0-9+/=]+$" }),
    /** SHA-256 of the executor's report tokens (POST /executor/v1/jobs/{id}/events). */
    token_sha256: Type.Array(Type.String({ pattern: "^[0-9a-f]{64}$" }), {
      default: [],
      uniqueItems: true,
    }),
    timeout: Type.String({
      pattern: DURATION_PATTERN,
      default: "30s",
      description: "Budget of one task POST, the answer's body included.",
    }),
    /** Largest answer read; above it the job ends in error executor_response_too_large. */
    max_response_bytes: Type.Integer({ minimum: 1024, maximum: 16_777_216, default: 262_144 }),
    /** Where a signed cancel request is POSTed once when a job of this route is cancelled. */
    cancel_url: Type.Optional(Type.String({ pattern: "^https?://", maxLength: 2048 })),
    max_attempts: Type.Integer({ minimum: 1, maximum: 50, default: 5 }),
    retry_backoff: Type.Array(Type.String({ pattern: DURATION_PATTERN }), {
      minItems: 1,
      maxItems: 50,
      default: ["1s", "5s", "30s", "2m"],
      description: "Delay before retry n (the last entry repeats).",
    }),
  },
  { additionalProperties: false },
);

export type HttpExecutorConfig = Static<typeof HttpExecutorSchema>;

export const httpExecutor: ExecutorKindDescriptor<HttpExecutorConfig> = {
  name: "http",
  config: HttpExecutorSchema,
  check(executor, key) {
    const issues: KindIssue[] = [];
    const problem = webhookSecretProblem(executor.secret);
    if (problem) issues.push({ key: `${key}.secret`, message: problem });
    if (!URL.canParse(executor.url)) issues.push({ key: `${key}.url`, message: "is not a URL" });
    return issues;
  },
  cancelRequest: (executor) =>
    executor.cancel_url === undefined
      ? undefined
      : {
          url: executor.cancel_url,
          secret: executor.secret,
          timeoutMs: parseDuration(executor.timeout),
        },
  reportTokens: (executor) => executor.token_sha256,
  answerCap: (executor) => ({ field: "max_response_bytes", bytes: executor.max_response_bytes }),
};
