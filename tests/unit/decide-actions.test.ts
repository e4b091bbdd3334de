/**
 * The operator and caller actions of issue 16 as pure decisions, given/when/then: given a job's
 * events, when an action is asked for, then the decision (and what evolve makes of the result).
 */
import { describe, expect, test } from "bun:test";
import {
  type Actor,
  CANCELLED,
  decideCancel,
  decideDiscardedResult,
  decideRetry,
  decideStatus,
  evolve,
  type JobEvent,
  type JobView,
  type RunRequested,
  replay,
  retryRequestId,
  streamKindOf,
  transition,
} from "../../shared/domain/index.ts";

const T0 = "2026-01-01T00:00:00.000Z";
const T1 = "2026-01-01T00:00:01.000Z";
const envelope = {
  schema_version: 1 as const,
  job_id: "job_a",
  client_id: "acme",
  occurred_at: T1,
};
const client: Actor = { kind: "client", id: "acme" };
const operator: Actor = { kind: "operator", id: "alice" };

const run: RunRequested = {
  ...envelope,
  id: "e0",
  type: "run.requested",
  occurred_at: T0,
  data: {
    request_id: "r1",
    route: "demo.echo",
    input: "hello",
    metadata: { principal: { id: "u1", tenant: "t1" } },
    callback_url: "https://example.com/cb",
    fingerprint: "0".repeat(64),
  },
};
const done: JobEvent = { ...envelope, id: "e1", type: "job.done", data: { output: "hello" } };
const failed: JobEvent = {
  ...envelope,
  id: "e2",
  type: "job.error",
  data: { code: "executor_unavailable", message: "down" },
};
const rejected: JobEvent = {
  ...envelope,
  id: "e3",
  type: "job.rejected",
  data: { code: "route_disabled", message: "off" },
};
const running: JobEvent = { ...envelope, id: "e4", type: "job.running", data: {} };

/** Given these events, the job's view. */
const given = (...events: JobEvent[]): JobView => replay(events) as JobView;

/** The event a decided status intent becomes once appended. */
const appended = (intent: { type: string; data: unknown }, id = "c1"): JobEvent =>
  ({ ...envelope, id, type: intent.type, data: intent.data }) as JobEvent;

describe("decideCancel", () => {
  test("given a queued job, when the client cancels, then job.error cancelled names the client", () => {
    const decision = decideCancel(given(run), client);
    expect(decision.kind).toBe("cancel");
    if (decision.kind !== "cancel") return;
    expect(decision.intent).toEqual({
      type: "job.error",
      data: { code: CANCELLED, message: "cancelled by client acme", cancelled_by: client },
    });
    // The status rules allow it, and the view shows who cancelled.
    expect(decideStatus("queued", decision.intent).kind).toBe("append");
    const view = evolve(given(run), appended(decision.intent)) as JobView;
    expect(view.status).toBe("error");
    expect(view.error).toEqual({
      code: "cancelled",
      message: "cancelled by client acme",
      cancelled_by: client,
    });
    expect(view.completed_at).toBe(T1);
  });

  test("given a running job, when an operator cancels, then the cancel names the operator", () => {
    const decision = decideCancel(given(run, running), operator);
    expect(decision.kind === "cancel" && decision.intent.data).toMatchObject({
      cancelled_by: operator,
    });
  });

  test("given a cancelled job, when cancelled again, then nothing is appended (200)", () => {
    const cancel = decideCancel(given(run), client);
    if (cancel.kind !== "cancel") throw new Error("expected a cancel");
    const cancelled = given(run, appended(cancel.intent));
    expect(decideCancel(cancelled, operator)).toEqual({ kind: "already_cancelled" });
  });

  test.each([
    ["done", done],
    ["error", failed],
    ["rejected", rejected],
  ] as const)(
    "given a job that ended %s, when cancelled, then it is final (409)",
    (status, end) => {
      expect(decideCancel(given(run, end), client)).toEqual({ kind: "final", status });
    },
  );

  test("given a cancelled job, when the executor's result arrives, then the status refuses it", () => {
    const cancel = decideCancel(given(run, running), client);
    if (cancel.kind !== "cancel") throw new Error("expected a cancel");
    const view = given(run, running, appended(cancel.intent));
    expect(decideStatus(view.status, { type: "job.done", data: { output: 1 } })).toEqual({
      kind: "refuse",
      reason: "job_final",
    });
    expect(transition(view, done).applied).toBe(false);
  });
});

describe("decideDiscardedResult", () => {
  const cancelEvent = appended(
    { type: "job.error", data: { code: "cancelled", message: "x", cancelled_by: client } },
    "c1",
  );

  test("given a cancel, when a done result is refused, then it is kept with its output", () => {
    expect(decideDiscardedResult(cancelEvent, { type: "job.done", data: { output: [1] } })).toEqual(
      { result_type: "job.done", output: [1], reason: "cancelled" },
    );
  });

  test("given a cancel, when an executor error is refused, then it is kept with its error", () => {
    expect(
      decideDiscardedResult(cancelEvent, {
        type: "job.rejected",
        data: { code: "executor_refused", message: "400" },
      }),
    ).toEqual({
      result_type: "job.rejected",
      error: { code: "executor_refused", message: "400" },
      reason: "cancelled",
    });
  });

  test("given a cancel, when the hub's own deadline or a second cancel is refused, then nothing is kept", () => {
    for (const code of ["deadline_exceeded", "cancelled"]) {
      expect(
        decideDiscardedResult(cancelEvent, { type: "job.error", data: { code, message: "m" } }),
      ).toBeNull();
    }
    expect(decideDiscardedResult(cancelEvent, { type: "job.running", data: {} })).toBeNull();
  });

  test("given a job that ended otherwise, when a duplicate result is refused, then nothing is kept", () => {
    expect(decideDiscardedResult(done, { type: "job.done", data: { output: 1 } })).toBeNull();
    expect(decideDiscardedResult(undefined, { type: "job.done", data: { output: 1 } })).toBeNull();
  });

  test("a discarded result is history: on .ops, and evolve leaves the view unchanged", () => {
    const view = given(run, cancelEvent);
    const discarded: JobEvent = {
      ...envelope,
      id: "d1",
      type: "job.result_discarded",
      data: { result_type: "job.done", output: "late", reason: "cancelled" },
    };
    expect(streamKindOf("job.result_discarded")).toBe("ops");
    expect(transition(view, discarded)).toEqual({
      applied: false,
      state: view,
      reason: "job_final",
    });
  });
});

describe("decideRetry", () => {
  test.each([
    ["error", failed],
    ["rejected", rejected],
  ] as const)(
    "given a job that ended %s, when an operator retries, then the same run is asked for again",
    (_s, end) => {
      const decision = decideRetry(given(run, end), run, operator);
      expect(decision.kind).toBe("retry");
      if (decision.kind !== "retry") return;
      const { request } = decision;
      expect(request).toMatchObject({
        request_id: "retry:job_a",
        route: "demo.echo",
        input: "hello",
        metadata: run.data.metadata,
        callback_url: run.data.callback_url,
        retry_of: "job_a",
        requested_by: operator,
      });
      expect(request.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    },
  );

  test("given a failed job, when retried twice, then both retries are the same request (one job)", () => {
    const first = decideRetry(given(run, failed), run, operator);
    const second = decideRetry(given(run, failed), run, { kind: "operator", id: "bob" });
    expect(first.kind === "retry" && second.kind === "retry").toBe(true);
    if (first.kind !== "retry" || second.kind !== "retry") return;
    expect(second.request.request_id).toBe(first.request.request_id);
    expect(second.request.fingerprint).toBe(first.request.fingerprint);
    expect(retryRequestId("job_a")).toBe("retry:job_a");
  });

  test.each([
    ["queued", [run]],
    ["running", [run, running]],
    ["done", [run, done]],
  ] as const)("given a %s job, when retried, then it is refused", (status, events) => {
    expect(decideRetry(given(...events), run, operator)).toEqual({ kind: "refuse", status });
  });

  test("both jobs show the link: retry_of on the new one, retried_as on the old one", () => {
    const retryRun: JobEvent = {
      ...run,
      id: "n0",
      job_id: "job_b",
      data: { ...run.data, request_id: "retry:job_a", retry_of: "job_a", requested_by: operator },
    };
    expect((evolve(null, retryRun) as JobView).retry_of).toBe("job_a");
    const retried: JobEvent = {
      ...envelope,
      id: "o1",
      type: "job.retried",
      data: { retry_job_id: "job_b", requested_by: operator },
    };
    expect(streamKindOf("job.retried")).toBe("ops");
    const old = evolve(given(run, failed), retried) as JobView;
    expect(old.retried_as).toBe("job_b");
    expect(old.status).toBe("error");
    expect(transition(null, retried)).toMatchObject({ applied: false, reason: "unknown_job" });
  });
});
