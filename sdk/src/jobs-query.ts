import { UnexpectedResponseError } from "./errors.js";
import type { CancelResult, Job, JobPage, JobStatus, ListJobsParams } from "./types.js";

const STATUSES: ReadonlySet<string> = new Set<JobStatus>([
  "queued",
  "dispatched",
  "running",
  "done",
  "error",
  "rejected",
]);

/** The hub's page size bounds for GET /jobs. */
export const LIST_LIMIT_MIN = 1;
export const LIST_LIMIT_MAX = 500;

/** Path of one job; ids are opaque, so they are always encoded. */
export function jobPath(jobId: string, suffix = ""): string {
  if (typeof jobId !== "string" || jobId === "") throw new TypeError("jobId is required");
  return `/jobs/${encodeURIComponent(jobId)}${suffix}`;
}

function asList<T extends string>(value: T | readonly T[] | undefined): readonly T[] {
  if (value === undefined) return [];
  return typeof value === "string" ? [value] : value;
}

function rfc3339(name: string, value: Date | string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw new TypeError(`${name} is an invalid Date`);
    return value.toISOString();
  }
  // The hub checks RFC 3339 strictly; catch the obvious mistakes here with a clear message.
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(value)) {
    throw new TypeError(`${name} must be a Date or an RFC 3339 time such as 2026-01-31T12:00:00Z`);
  }
  return value;
}

/**
 * Builds the path and query of GET /jobs: `status` and `route` repeat, times are RFC 3339, and
 * parameters are sent only when given. Throws TypeError for values the hub would refuse.
 */
export function listJobsPath(params: ListJobsParams = {}): string {
  const query = new URLSearchParams();
  for (const status of asList(params.status)) {
    if (!STATUSES.has(status)) throw new TypeError(`status "${status}" is not a job status`);
    query.append("status", status);
  }
  for (const route of asList(params.route)) {
    if (typeof route !== "string" || route === "") throw new TypeError("route must be non-empty");
    query.append("route", route);
  }
  const after = rfc3339("createdAfter", params.createdAfter);
  if (after !== undefined) query.set("created_after", after);
  const before = rfc3339("createdBefore", params.createdBefore);
  if (before !== undefined) query.set("created_before", before);
  if (params.limit !== undefined) {
    const { limit } = params;
    if (!Number.isInteger(limit) || limit < LIST_LIMIT_MIN || limit > LIST_LIMIT_MAX) {
      throw new TypeError(`limit must be an integer from ${LIST_LIMIT_MIN} to ${LIST_LIMIT_MAX}`);
    }
    query.set("limit", String(limit));
  }
  if (params.cursor !== undefined) {
    if (params.cursor === "") throw new TypeError("cursor must be non-empty when given");
    query.set("cursor", params.cursor);
  }
  const text = query.toString();
  return text === "" ? "/jobs" : `/jobs?${text}`;
}

function isJob(value: unknown): value is Job {
  const v = value as Partial<Job> | null;
  return (
    typeof v === "object" &&
    v !== null &&
    typeof v.job_id === "string" &&
    typeof v.status === "string"
  );
}

/** Checks that a 2xx body is a job record. */
export function parseJob(status: number, body: unknown): Job {
  if (!isJob(body)) throw new UnexpectedResponseError(status, "the body is not a job record");
  return body;
}

/** Reads `{"jobs": [...], "next_cursor": "..." | null}` into a JobPage. */
export function parseJobPage(status: number, body: unknown): JobPage {
  const b = body as { jobs?: unknown; next_cursor?: unknown } | null;
  if (typeof b !== "object" || b === null || !Array.isArray(b.jobs) || !b.jobs.every(isJob)) {
    throw new UnexpectedResponseError(status, "the body is not a page of jobs");
  }
  const cursor = b.next_cursor;
  if (cursor !== null && cursor !== undefined && (typeof cursor !== "string" || cursor === "")) {
    throw new UnexpectedResponseError(status, "next_cursor is neither a string nor null");
  }
  return { jobs: b.jobs, nextCursor: cursor ?? null };
}

/** 202: the hub is carrying the cancel out; 200: the job was already cancelled. */
export function parseCancel(status: number, body: unknown): CancelResult {
  if (status !== 200 && status !== 202) {
    throw new UnexpectedResponseError(status, "cancel answers 200 or 202");
  }
  return { state: status === 202 ? "cancelling" : "cancelled", job: parseJob(status, body) };
}

/**
 * Every job matching `params`, page after page (newest first), reading the next page only when
 * the previous one is used up. The cursor is opaque and stable under concurrent inserts.
 */
export async function* paginate(
  params: ListJobsParams,
  readPage: (params: ListJobsParams) => Promise<JobPage>,
): AsyncGenerator<Job, void, undefined> {
  let cursor = params.cursor;
  for (;;) {
    const page = await readPage(cursor === undefined ? params : { ...params, cursor });
    yield* page.jobs;
    if (page.nextCursor === null) return;
    if (page.nextCursor === cursor) {
      throw new UnexpectedResponseError(200, "next_cursor repeats the cursor just sent");
    }
    cursor = page.nextCursor;
  }
}
