import { type CancelDeps, cancelJob } from "../../shared/actions/index.ts";
import { classifyNatsError } from "../../shared/bus/index.ts";
import type { ClientConfig } from "../../shared/config/index.ts";
import { JOB_STATUSES, type JobStatus, toJobResource } from "../../shared/domain/index.ts";
import {
  InvalidRequestError,
  JobFinalError,
  JobNotFoundError,
  NotFoundError,
} from "../../shared/errors/index.ts";
import { readBodyCapped } from "../../shared/http/index.ts";
import { JOB_ID_PATTERN } from "../../shared/ids/index.ts";
import {
  decodeCursor,
  encodeCursor,
  type IndexStore,
  listHeaders,
  type PagePosition,
  parseTime,
  queryValues,
  refuseUnknown,
} from "../../shared/search/index.ts";

/** GET /jobs page size bounds (issue 16). */
export const LIST_LIMIT = { min: 1, max: 500, default: 50 } as const;
const MAX_FILTER_VALUES = 20;
const ROUTE = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/;
const LIST_PARAMS = new Set([
  "status",
  "route",
  "created_after",
  "created_before",
  "limit",
  "cursor",
]);

export interface JobsApiDeps {
  /** The search index; absent when `index.enabled` is false (GET /jobs answers 404). */
  readonly store?: IndexStore;
  readonly cancel: CancelDeps;
  readonly now: () => number;
  /** The body limit of the Client API (server.max_body_bytes): a cancel's body is read up to it. */
  readonly maxBodyBytes: number;
}

export interface JobsApi {
  /** GET /jobs: the calling client's jobs, newest first, from the search index. */
  list(request: Request, client: ClientConfig): Promise<Response>;
  /** POST /jobs/{job_id}/cancel. */
  cancel(request: Request, client: ClientConfig, jobId: string): Promise<Response>;
}

function json(body: unknown, status: number, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store", ...headers },
  });
}

const invalid = (param: string, message: string) =>
  new InvalidRequestError({
    detail: `${param}: ${message}`,
    errors: [{ pointer: `/query/${param}`, message }],
  });

interface ListQuery {
  readonly statuses: JobStatus[];
  readonly routes: string[];
  readonly fromMs?: number;
  readonly beforeMs?: number;
  readonly limit: number;
  readonly after?: PagePosition;
}

/** Parses and checks GET /jobs's query; a bad or unknown parameter is a 400 naming it. */
export function parseListQuery(url: URL): ListQuery {
  refuseUnknown(url, LIST_PARAMS, invalid);
  const statuses = queryValues(url, "status", MAX_FILTER_VALUES, invalid);
  for (const s of statuses) {
    if (!(JOB_STATUSES as readonly string[]).includes(s)) {
      throw invalid("status", `'${s.slice(0, 40)}' is not one of ${JOB_STATUSES.join(", ")}`);
    }
  }
  const routes = queryValues(url, "route", MAX_FILTER_VALUES, invalid);
  for (const r of routes) {
    if (r.length > 128 || !ROUTE.test(r)) throw invalid("route", "is not a route key");
  }
  const fromMs = parseTime(url, "created_after", invalid);
  const beforeMs = parseTime(url, "created_before", invalid);
  const [limitText] = queryValues(url, "limit", 1, invalid);
  let limit: number = LIST_LIMIT.default;
  if (limitText !== undefined) {
    limit = /^\d{1,4}$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= LIST_LIMIT.min && limit <= LIST_LIMIT.max)) {
      throw invalid("limit", `must be an integer from ${LIST_LIMIT.min} to ${LIST_LIMIT.max}`);
    }
  }
  const [cursor] = queryValues(url, "cursor", 1, invalid);
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  if (cursor !== undefined && after === undefined) {
    throw invalid("cursor", "is not a cursor from a previous page");
  }
  return {
    statuses: statuses as JobStatus[],
    routes,
    limit,
    ...(fromMs === undefined ? {} : { fromMs }),
    ...(beforeMs === undefined ? {} : { beforeMs }),
    ...(after === undefined ? {} : { after }),
  };
}

/** Lenient: any bytes that are not "" or "{}" are refused alike, UTF-8 or not. */
const utf8 = new TextDecoder("utf-8");

/**
 * A cancel takes no body: none, or an empty JSON object (for clients that always send one). Read
 * through the capped reader like every body, so a huge or chunked one is a 413 (and a client that
 * goes away mid-body is a disconnect), never a whole body in memory.
 */
async function refuseBody(request: Request, maxBodyBytes: number): Promise<void> {
  const text = utf8.decode(await readBodyCapped(request, maxBodyBytes)).trim();
  if (text !== "" && text !== "{}") {
    throw new InvalidRequestError({
      detail: "A cancel takes no body.",
      errors: [{ pointer: "", message: "must be empty" }],
    });
  }
}

export function createJobsApi(deps: JobsApiDeps): JobsApi {
  return {
    async list(request, client) {
      if (!deps.store) {
        throw new NotFoundError({
          detail: "Listing jobs is not enabled on this hub (index.enabled).",
        });
      }
      const query = parseListQuery(new URL(request.url));
      const [page, position] = await Promise.all([
        deps.store.page({
          filter: {
            clientIds: [client.id],
            statuses: query.statuses,
            routes: query.routes,
            ...(query.fromMs === undefined ? {} : { createdFromMs: query.fromMs }),
            ...(query.beforeMs === undefined ? {} : { createdBeforeMs: query.beforeMs }),
          },
          limit: query.limit,
          ...(query.after ? { after: query.after } : {}),
        }),
        deps.store.position(),
      ]);
      return json(
        {
          jobs: page.views.map(toJobResource),
          next_cursor: page.next === null ? null : encodeCursor(page.next),
        },
        200,
        listHeaders(position, deps.now()),
      );
    },

    async cancel(request, client, jobId) {
      const notFound = () =>
        new JobNotFoundError({ detail: "No job with this id exists for this client." });
      if (!JOB_ID_PATTERN.test(jobId)) throw notFound();
      await refuseBody(request, deps.maxBodyBytes);
      const outcome = await cancelJob(deps.cancel, {
        clientId: client.id,
        jobId,
        by: { kind: "client", id: client.id },
      }).catch((err: unknown) => {
        throw classifyNatsError(err) ?? err;
      });
      switch (outcome.kind) {
        case "unknown":
          throw notFound();
        case "final":
          throw new JobFinalError({
            detail: `The job already ended with status ${outcome.job.status}; nothing to cancel.`,
          });
        case "already_cancelled":
          return json(toJobResource(outcome.job), 200);
        case "cancelled":
          return json(toJobResource(outcome.job), 202);
        default: {
          const unreachable: never = outcome;
          return unreachable;
        }
      }
    },
  };
}
