import { createHash, timingSafeEqual } from "node:crypto";
import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { InvalidArgumentError } from "@nats-io/transport-node";
import { type Static, Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { classifyNatsError } from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import type { RouteConfig } from "../../shared/config/index.ts";
import type { DispatchIndex } from "../../shared/dispatch/index.ts";
import { type JobStatus, reportIntent, statusAfter } from "../../shared/domain/index.ts";
import {
  InvalidRequestError,
  JobNotFoundError,
  JobStateConflictError,
  PayloadTooLargeError,
  problemResponse,
  SwitchyardError,
  UnauthorizedError,
} from "../../shared/errors/index.ts";
import { reportTokensOf } from "../../shared/executor-kinds/index.ts";
import { readJsonBody } from "../../shared/http/index.ts";
import { type IdGenerator, JOB_ID_PATTERN } from "../../shared/ids/index.ts";
import { type EventLayout, readRunOfJob, writeStatus } from "../../shared/jobs/index.ts";
import {
  checkJsonShape,
  containsNumber,
  lossyNumbers,
  OUTPUT_SHAPE_LIMITS,
} from "../../shared/json/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { pathOf } from "./http-edge.ts";

/** Path of the report endpoint; `:job_id` is the task's job id. */
export const EXECUTOR_REPORT_PATH = "/executor/v1/jobs/:job_id/events";

const ErrorInfo = Type.Object(
  {
    code: Type.String({ minLength: 1, maxLength: 64 }),
    message: Type.String({ maxLength: 2000 }),
  },
  { additionalProperties: false },
);

/** The report body: what the executor says happened. */
export const ExecutorReportSchema = Type.Union([
  Type.Object({ type: Type.Literal("running") }, { additionalProperties: false }),
  Type.Object(
    { type: Type.Literal("done"), output: Type.Unknown() },
    { additionalProperties: false },
  ),
  Type.Object({ type: Type.Literal("error"), error: ErrorInfo }, { additionalProperties: false }),
  Type.Object(
    { type: Type.Literal("rejected"), error: ErrorInfo },
    { additionalProperties: false },
  ),
]);
export type ExecutorReport = Static<typeof ExecutorReportSchema>;

const checker = TypeCompiler.Compile(ExecutorReportSchema);

/** Handles POST /executor/v1/jobs/{job_id}/events. */
export interface ExecutorReportHandler {
  handle(request: Request, jobId: string): Promise<Response>;
}

export interface ExecutorReportDeps {
  readonly js: JetStreamClient;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
  readonly jsm: JetStreamManager;
  readonly routes: readonly RouteConfig[];
  readonly index: DispatchIndex;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly logger: Logger;
  /** Largest report body (a done report carries the output). */
  readonly maxBodyBytes: number;
}

/**
 * Which client and route a job belongs to. The dispatch record (written when the executor answered
 * 202) is the quick way; an executor that reports before that answer reached the hub, or a job
 * without a record, is found by its run.requested (readRunOfJob).
 */
async function findOwner(
  deps: ExecutorReportDeps,
  jobId: string,
): Promise<{ readonly client_id: string; readonly route: string } | undefined> {
  const record = await deps.index.get(jobId);
  if (record) return { client_id: record.client_id, route: record.route };
  const run = await readRunOfJob(deps, jobId);
  if (run === null) return undefined;
  const { event } = run;
  return event.type === "run.requested"
    ? { client_id: event.client_id, route: event.data.route }
    : undefined;
}

const CHALLENGE = { "www-authenticate": 'Bearer realm="switchyard-executor"' };

async function readReport(request: Request, maxBytes: number): Promise<ExecutorReport> {
  const { value, text } = await readJsonBody(request, maxBytes);
  if (!checker.Check(value)) {
    const first = checker.Errors(value).First();
    throw new InvalidRequestError({
      detail: "The report does not match the schema in docs/executors.md.",
      errors: [{ pointer: first?.path || "/", message: first?.message ?? "invalid" }],
    });
  }
  if ("error" in value) {
    for (const field of ["code", "message"] as const) {
      if (!value.error[field].isWellFormed()) {
        const message = "holds an unpaired UTF-16 surrogate, which is not Unicode text (RFC 7493)";
        throw new InvalidRequestError({
          detail: `error.${field}: ${message}`,
          errors: [{ pointer: `/error/${field}`, message }],
        });
      }
    }
  }
  // The output is stored in an event and served by GET: bounded, so nothing downstream overflows.
  const problem =
    value.type === "done" ? checkJsonShape(value.output, OUTPUT_SHAPE_LIMITS) : undefined;
  if (problem) {
    throw new InvalidRequestError({
      detail: `output${problem.pointer}: ${problem.message}`,
      errors: [{ pointer: `/output${problem.pointer}`, message: problem.message }],
    });
  }
  const lossy = value.type === "done" && containsNumber(value.output) ? lossyNumbers(text) : [];
  if (lossy.length > 0) {
    const message = `the number ${lossy[0]?.slice(0, 40)} cannot be kept exactly; send it as a string`;
    throw new InvalidRequestError({
      detail: `output: ${message}`,
      errors: [{ pointer: "/output", message }],
    });
  }
  return value;
}

/**
 * The executor report endpoint. An HTTP executor that answered 202 reports running / done /
 * error / rejected here. The bearer token is checked against every HTTP route's token hashes
 * (constant time, no early exit); the job is found by id in the dispatch index (written before
 * the task was sent) and must belong to a route the token is for. Unknown jobs and other
 * routes' jobs answer the same 404. The event is appended with the job subject's expected last
 * sequence, the same optimistic concurrency every status writer uses.
 */
export function createExecutorReportHandler(deps: ExecutorReportDeps): ExecutorReportHandler {
  const hashes = deps.routes.flatMap((route) =>
    reportTokensOf(route.executor).map((hex) => ({
      hash: Buffer.from(hex, "hex"),
      route: route.key,
    })),
  );

  const routesOf = (authorization: string | null): Set<string> => {
    const match = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(authorization ?? "");
    if (!match?.[1]) {
      throw new UnauthorizedError({
        detail: "Send Authorization: Bearer <executor token>.",
        headers: CHALLENGE,
      });
    }
    const presented = createHash("sha256").update(match[1]).digest();
    const routes = new Set<string>();
    for (const entry of hashes) {
      if (timingSafeEqual(entry.hash, presented)) routes.add(entry.route);
    }
    if (routes.size === 0) {
      throw new UnauthorizedError({
        detail: "The executor token is not valid.",
        headers: CHALLENGE,
      });
    }
    return routes;
  };

  const handle = async (request: Request, jobId: string): Promise<Response> => {
    const routes = routesOf(request.headers.get("authorization"));
    const notFound = () =>
      new JobNotFoundError({ detail: "No job with this id was dispatched to this executor." });
    if (!JOB_ID_PATTERN.test(jobId)) throw notFound();
    const report = await readReport(request, deps.maxBodyBytes);
    const owner = await findOwner(deps, jobId);
    if (!owner || !routes.has(owner.route)) throw notFound();
    const intent = reportIntent(report);
    const target: JobStatus = statusAfter(intent.type);
    const result = await writeStatus(deps, {
      ref: { client_id: owner.client_id, job_id: jobId },
      intent,
    });
    if (result.kind === "refused") {
      throw new JobStateConflictError({
        detail: `The job is ${result.current.status}; a '${report.type}' report does not apply.`,
      });
    }
    deps.logger.info(
      { job_id: jobId, route: owner.route, status: target },
      "executor report applied",
    );
    return new Response(JSON.stringify({ job_id: jobId, status: target }), {
      status: 200,
      headers: { "content-type": "application/json", "cache-control": "no-store" },
    });
  };

  return {
    async handle(request, jobId) {
      try {
        return await handle(request, jobId);
      } catch (err) {
        const known =
          err instanceof SwitchyardError
            ? err
            : err instanceof InvalidArgumentError
              ? new PayloadTooLargeError({
                  detail: "The report's event would be larger than NATS max_payload allows.",
                })
              : classifyNatsError(err);
        if (known === undefined) {
          deps.logger.error(
            { err: (err as Error).message, job_id: jobId },
            "executor report failed",
          );
        }
        return problemResponse(known ?? err, pathOf(request));
      }
    },
  };
}
