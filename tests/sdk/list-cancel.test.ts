/**
 * Unit tests of the SDK's pure logic for GET /jobs and POST /jobs/{job_id}/cancel: the request it
 * builds and how it reads the answers. The same calls against the real hub are in
 * list-cancel-hub.test.ts (and tests/sdk/python/test_list_cancel_hub.py).
 */
import { describe, expect, test } from "bun:test";
import {
  apiErrorFrom,
  ConflictError,
  InvalidRequestError,
  type Job,
  type JobPage,
  type ListJobsParams,
  listJobsPath,
  NotFoundError,
  UnexpectedResponseError,
} from "../../sdk/src/index.ts";
import { jobPath, paginate, parseCancel, parseJobPage } from "../../sdk/src/jobs-query.ts";

const job = (n: number, status: Job["status"] = "done"): Job => ({
  job_id: `job_${String(n).padStart(22, "0")}`,
  request_id: `r${n}`,
  route: "demo.echo",
  status,
  created_at: "2026-01-31T12:00:00.000Z",
  updated_at: "2026-01-31T12:00:00.000Z",
});

describe("listJobsPath", () => {
  test("no filters: /jobs with no query", () => {
    expect(listJobsPath()).toBe("/jobs");
    expect(listJobsPath({})).toBe("/jobs");
  });

  test("status and route repeat; times are RFC 3339; limit and cursor pass through", () => {
    const path = listJobsPath({
      status: ["error", "rejected"],
      route: ["billing.invoice", "demo.*"],
      createdAfter: new Date("2026-01-31T12:00:00Z"),
      createdBefore: "2026-02-01T00:00:00+01:00",
      limit: 500,
      cursor: "c/1+=",
    });
    const url = new URL(path, "http://hub");
    expect(url.pathname).toBe("/jobs");
    expect(url.searchParams.getAll("status")).toEqual(["error", "rejected"]);
    expect(url.searchParams.getAll("route")).toEqual(["billing.invoice", "demo.*"]);
    expect(url.searchParams.get("created_after")).toBe("2026-01-31T12:00:00.000Z");
    expect(url.searchParams.get("created_before")).toBe("2026-02-01T00:00:00+01:00");
    expect(url.searchParams.get("limit")).toBe("500");
    // The opaque cursor survives encoding unchanged.
    expect(url.searchParams.get("cursor")).toBe("c/1+=");
    expect([...url.searchParams.keys()].sort()).toEqual([
      "created_after",
      "created_before",
      "cursor",
      "limit",
      "route",
      "route",
      "status",
      "status",
    ]);
  });

  test("a single status or route is one parameter", () => {
    expect(listJobsPath({ status: "running", route: "demo.echo", limit: 1 })).toBe(
      "/jobs?status=running&route=demo.echo&limit=1",
    );
  });

  test.each<[string, ListJobsParams, RegExp]>([
    ["an unknown status", { status: "cancelled" as Job["status"] }, /not a job status/],
    ["an empty route", { route: "" }, /route/],
    ["limit 0", { limit: 0 }, /limit must be an integer from 1 to 500/],
    ["limit 501", { limit: 501 }, /limit/],
    ["a fractional limit", { limit: 2.5 }, /limit/],
    ["a time without zone", { createdAfter: "2026-01-31T12:00:00" }, /createdAfter.*RFC 3339/],
    ["an invalid Date", { createdBefore: new Date("nope") }, /createdBefore is an invalid Date/],
    ["an empty cursor", { cursor: "" }, /cursor/],
  ])("refuses %s before sending anything", (_what, params, message) => {
    expect(() => listJobsPath(params)).toThrow(message);
  });
});

describe("answers of GET /jobs", () => {
  test("a page with a cursor, and the last page", () => {
    expect(parseJobPage(200, { jobs: [job(1)], next_cursor: "abc" })).toEqual({
      jobs: [job(1)],
      nextCursor: "abc",
    });
    expect(parseJobPage(200, { jobs: [], next_cursor: null }).nextCursor).toBeNull();
  });

  test("unknown members are ignored; a body that is not a page is UnexpectedResponseError", () => {
    expect(parseJobPage(200, { jobs: [job(2)], next_cursor: null, total: 9 }).jobs).toHaveLength(1);
    for (const bad of [
      undefined,
      "<html>",
      { jobs: "x" },
      { jobs: [{}] },
      { jobs: [], next_cursor: 3 },
    ]) {
      expect(() => parseJobPage(200, bad)).toThrow(UnexpectedResponseError);
    }
  });

  test("a 400 naming the parameter is InvalidRequestError with the pointer", () => {
    const error = apiErrorFrom({
      status: 400,
      body: {
        type: "https://switchyard.dev/problems/invalid_request",
        title: "Invalid request",
        status: 400,
        code: "invalid_request",
        detail: "limit: must be at most 500",
        errors: [{ pointer: "/limit", message: "must be at most 500" }],
      },
    });
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect(error.errors).toEqual([{ pointer: "/limit", message: "must be at most 500" }]);
  });
});

describe("paging", () => {
  test("reads page after page with the cursor, keeping the filters", async () => {
    const asked: ListJobsParams[] = [];
    const pages: Record<string, JobPage> = {
      first: { jobs: [job(1), job(2)], nextCursor: "c2" },
      c2: { jobs: [job(3)], nextCursor: "c3" },
      c3: { jobs: [], nextCursor: null },
    };
    const seen: string[] = [];
    for await (const j of paginate({ status: "done", limit: 2 }, async (params) => {
      asked.push(params);
      return pages[params.cursor ?? "first"] as JobPage;
    })) {
      seen.push(j.request_id);
    }
    expect(seen).toEqual(["r1", "r2", "r3"]);
    expect(asked).toEqual([
      { status: "done", limit: 2 },
      { status: "done", limit: 2, cursor: "c2" },
      { status: "done", limit: 2, cursor: "c3" },
    ]);
  });

  test("stops reading when the caller stops iterating", async () => {
    let reads = 0;
    for await (const _ of paginate({}, async () => {
      reads += 1;
      return { jobs: [job(reads)], nextCursor: `c${reads}` };
    })) {
      break;
    }
    expect(reads).toBe(1);
  });

  test("a cursor that repeats is an error, not an endless loop", async () => {
    const loop = async () => {
      for await (const _ of paginate({ cursor: "same" }, async () => ({
        jobs: [job(1)],
        nextCursor: "same",
      }))) {
        // drain
      }
    };
    await expect(loop()).rejects.toBeInstanceOf(UnexpectedResponseError);
  });
});

describe("POST /jobs/{job_id}/cancel", () => {
  test("the path encodes the opaque id", () => {
    expect(jobPath("job_a/b?c", "/cancel")).toBe("/jobs/job_a%2Fb%3Fc/cancel");
    expect(() => jobPath("", "/cancel")).toThrow(TypeError);
  });

  test("202 is cancelling, 200 is already cancelled; both carry the job", () => {
    const running = job(1, "running");
    expect(parseCancel(202, running)).toEqual({ state: "cancelling", job: running });
    const cancelled = { ...job(1, "error"), error: { code: "cancelled", message: "by acme" } };
    expect(parseCancel(200, cancelled)).toEqual({ state: "cancelled", job: cancelled });
    expect(() => parseCancel(204, undefined)).toThrow(UnexpectedResponseError);
  });

  test("409 job_final is ConflictError; 404 is NotFoundError; neither is retryable", () => {
    const final = apiErrorFrom({
      status: 409,
      body: { type: "t", title: "Job is final", status: 409, code: "job_final", detail: "done" },
    });
    expect(final).toBeInstanceOf(ConflictError);
    expect(final).toMatchObject({ code: "job_final", retryable: false });
    const missing = apiErrorFrom({ status: 404, body: { code: "job_not_found", title: "x" } });
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(missing.retryable).toBe(false);
  });

  test("a non-problem error body still maps by status", () => {
    const error = apiErrorFrom({ status: 502, statusText: "Bad Gateway", body: undefined });
    expect(error).toMatchObject({ code: "http_502", title: "Bad Gateway", retryable: true });
  });
});
