import { CLIENT_ID_PATTERN } from "../../shared/config/index.ts";
import { JOB_STATUSES, type JobStatus } from "../../shared/domain/index.ts";
import { InvalidRequestError } from "../../shared/errors/index.ts";
import {
  decodeCursor,
  type JobFilter,
  type PagePosition,
  parseTime,
  queryValues,
  refuseUnknown,
} from "../../shared/search/index.ts";

export const PAGE_LIMIT = { min: 1, max: 500, default: 50 } as const;
const MAX_VALUES = 20;
const ROUTE = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/;
const CODE = /^[A-Za-z0-9_.:-]{1,64}$/;
const CLIENT = new RegExp(CLIENT_ID_PATTERN);
const CALLBACK = ["pending", "delivered", "failed"] as const;
const SEARCH_PARAMS = [
  "client",
  "status",
  "route",
  "error_code",
  "tenant",
  "callback",
  "request_id",
  "created_after",
  "created_before",
] as const;

export const invalid = (param: string, message: string) =>
  new InvalidRequestError({
    detail: `${param}: ${message}`,
    errors: [{ pointer: `/query/${param}`, message }],
  });

function values(url: URL, name: string, pattern: RegExp, what: string): string[] {
  const found = queryValues(url, name, MAX_VALUES, invalid);
  for (const v of found)
    if (!pattern.test(v)) throw invalid(name, `'${v.slice(0, 40)}' is not ${what}`);
  return found;
}

function oneOf<T extends string>(url: URL, name: string, allowed: readonly T[]): T[] {
  const found = queryValues(url, name, MAX_VALUES, invalid);
  for (const v of found) {
    if (!(allowed as readonly string[]).includes(v)) {
      throw invalid(name, `'${v.slice(0, 40)}' is not one of ${allowed.join(", ")}`);
    }
  }
  return found as T[];
}

/** The filter of an operator search (or of a bulk action's `where`), from query parameters. */
export function filterOf(url: URL): JobFilter {
  const [requestId] = queryValues(url, "request_id", 1, invalid);
  const from = parseTime(url, "created_after", invalid);
  const before = parseTime(url, "created_before", invalid);
  return {
    clientIds: values(url, "client", CLIENT, "a client id"),
    statuses: oneOf<JobStatus>(url, "status", JOB_STATUSES),
    routes: values(url, "route", ROUTE, "a route key"),
    errorCodes: values(url, "error_code", CODE, "an error code"),
    tenants: queryValues(url, "tenant", MAX_VALUES, invalid),
    callbackStatuses: oneOf(url, "callback", CALLBACK),
    ...(requestId === undefined ? {} : { requestId }),
    ...(from === undefined ? {} : { createdFromMs: from }),
    ...(before === undefined ? {} : { createdBeforeMs: before }),
  };
}

/** A search: filter, page size and position; unknown parameters are refused by name. */
export function parseSearch(
  url: URL,
  extra: readonly string[] = [],
): { filter: JobFilter; limit: number; after?: PagePosition } {
  refuseUnknown(url, new Set([...SEARCH_PARAMS, "limit", "cursor", ...extra]), invalid);
  const filter = filterOf(url);
  const [limitText] = queryValues(url, "limit", 1, invalid);
  const limit = limitText === undefined ? PAGE_LIMIT.default : Number(limitText);
  if (
    !/^\d{1,4}$/.test(limitText ?? "1") ||
    !(limit >= PAGE_LIMIT.min && limit <= PAGE_LIMIT.max)
  ) {
    throw invalid("limit", `must be an integer from ${PAGE_LIMIT.min} to ${PAGE_LIMIT.max}`);
  }
  const [cursor] = queryValues(url, "cursor", 1, invalid);
  const after = cursor === undefined ? undefined : decodeCursor(cursor);
  if (cursor !== undefined && after === undefined) {
    throw invalid("cursor", "is not a cursor from a previous page");
  }
  return { filter, limit, ...(after ? { after } : {}) };
}

/** An endpoint that takes no query parameters refuses any, by name. */
export function noQuery(request: Request): void {
  refuseUnknown(new URL(request.url), new Set(), invalid);
}

/** The names of the search parameters, for a bulk action's `where` object. */
export const WHERE_KEYS: readonly string[] = SEARCH_PARAMS;
