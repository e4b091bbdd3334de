import { describe, expect, test } from "bun:test";
import {
  canMove,
  evolve,
  type JobEvent,
  type JobState,
  type JobStatus,
  type JobView,
  replay,
  transition,
} from "../../shared/domain/index.ts";

const T0 = "2026-01-01T00:00:00.000Z";
const T1 = "2026-01-01T00:00:01.000Z";

const base = { schema_version: 1 as const, job_id: "job_a", client_id: "acme", occurred_at: T1 };
const requested = (callback = false): JobEvent => ({
  ...base,
  id: "e0",
  type: "run.requested",
  occurred_at: T0,
  data: {
    request_id: "r1",
    route: "demo.echo",
    input: "hi",
    fingerprint: "0".repeat(64),
    ...(callback ? { callback_url: "https://example.com/cb" } : {}),
  },
});

const statusEvents: Record<string, JobEvent> = {
  "job.dispatched": {
    ...base,
    id: "e1",
    type: "job.dispatched",
    data: { target: "http", attempt: 1 },
  },
  "job.attempt_failed": {
    ...base,
    id: "e1b",
    type: "job.attempt_failed",
    data: { target: "http", attempt: 1, reason: "http_503", status_code: 503 },
  },
  "job.running": { ...base, id: "e2", type: "job.running", data: {} },
  "job.done": { ...base, id: "e3", type: "job.done", data: { output: { ok: true } } },
  "job.error": { ...base, id: "e4", type: "job.error", data: { code: "boom", message: "failed" } },
  "job.rejected": {
    ...base,
    id: "e5",
    type: "job.rejected",
    data: { code: "no", message: "refused" },
  },
};

function inStatus(status: JobStatus): JobView {
  const queued = evolve(null, requested(true)) as JobView;
  return { ...queued, status };
}

/** The whole table: from-status × event → resulting status, or "ignored". */
const TABLE: Record<JobStatus, Record<string, JobStatus | "ignored">> = {
  queued: {
    "job.attempt_failed": "dispatched",
    "job.dispatched": "dispatched",
    "job.running": "running",
    "job.done": "done",
    "job.error": "error",
    "job.rejected": "rejected",
  },
  dispatched: {
    "job.attempt_failed": "dispatched",
    "job.dispatched": "dispatched",
    "job.running": "running",
    "job.done": "done",
    "job.error": "error",
    "job.rejected": "rejected",
  },
  running: {
    "job.attempt_failed": "ignored",
    "job.dispatched": "ignored",
    "job.running": "running",
    "job.done": "done",
    "job.error": "error",
    "job.rejected": "ignored",
  },
  done: {
    "job.attempt_failed": "ignored",
    "job.dispatched": "ignored",
    "job.running": "ignored",
    "job.done": "ignored",
    "job.error": "ignored",
    "job.rejected": "ignored",
  },
  error: {
    "job.attempt_failed": "ignored",
    "job.dispatched": "ignored",
    "job.running": "ignored",
    "job.done": "ignored",
    "job.error": "ignored",
    "job.rejected": "ignored",
  },
  rejected: {
    "job.attempt_failed": "ignored",
    "job.dispatched": "ignored",
    "job.running": "ignored",
    "job.done": "ignored",
    "job.error": "ignored",
    "job.rejected": "ignored",
  },
};

describe("evolve: the job status machine", () => {
  test("run.requested creates a queued job with the request's fields", () => {
    const state = evolve(null, requested());
    expect(state).toMatchObject({
      job_id: "job_a",
      client_id: "acme",
      request_id: "r1",
      route: "demo.echo",
      status: "queued",
      created_at: T0,
      updated_at: T0,
    });
    expect(state?.callback).toBeUndefined();
  });

  test("a run with callback_url starts with a pending callback", () => {
    expect(evolve(null, requested(true))?.callback).toEqual({ status: "pending", attempts: 0 });
  });

  test("a second run.requested is ignored as a duplicate", () => {
    const first = evolve(null, requested());
    const result = transition(first, requested());
    expect(result.applied).toBe(false);
    expect(result.applied === false && result.reason).toBe("duplicate_request");
    expect(result.state).toBe(first);
  });

  test.each(Object.keys(statusEvents))("%s on an unknown job is ignored", (type) => {
    const result = transition(null, statusEvents[type] as JobEvent);
    expect(result).toEqual({ applied: false, state: null, reason: "unknown_job" });
  });

  for (const [from, row] of Object.entries(TABLE) as [
    JobStatus,
    Record<string, JobStatus | "ignored">,
  ][]) {
    for (const [type, expected] of Object.entries(row)) {
      test(`${from} + ${type} → ${expected}`, () => {
        const state = inStatus(from);
        const result = transition(state, statusEvents[type] as JobEvent);
        if (expected === "ignored") {
          expect(result.applied).toBe(false);
          expect(result.state).toBe(state);
          expect(result.applied === false && result.reason).toBe(
            from === "done" || from === "error" || from === "rejected"
              ? "job_final"
              : "illegal_transition",
          );
        } else {
          expect(result.applied).toBe(true);
          expect(result.state?.status).toBe(expected);
          expect(result.state?.updated_at).toBe(T1);
          expect(canMove(from, expected)).toBe(true);
        }
      });
    }
  }

  test("done keeps the output, error and rejected keep the error, final ones get completed_at", () => {
    const queued = evolve(null, requested());
    expect(evolve(queued, statusEvents["job.done"] as JobEvent)).toMatchObject({
      status: "done",
      output: { ok: true },
      completed_at: T1,
    });
    expect(evolve(queued, statusEvents["job.error"] as JobEvent)).toMatchObject({
      status: "error",
      error: { code: "boom", message: "failed" },
    });
    expect(evolve(queued, statusEvents["job.rejected"] as JobEvent)).toMatchObject({
      status: "rejected",
      error: { code: "no", message: "refused" },
    });
  });

  test("callback events update only the callback, never the status", () => {
    let state: JobState = replay([requested(true), statusEvents["job.done"] as JobEvent]);
    state = evolve(state, {
      ...base,
      id: "c1",
      type: "callback.attempted",
      data: {
        attempt: 1,
        status_code: 500,
        duration_ms: 12,
        next_attempt_at: "2026-01-01T00:00:06.000Z",
      },
    });
    expect(state?.callback).toEqual({
      status: "pending",
      attempts: 1,
      last_attempt_at: T1,
      next_attempt_at: "2026-01-01T00:00:06.000Z",
    });
    state = evolve(state, {
      ...base,
      id: "c2",
      type: "callback.failed",
      data: { attempts: 1, reason: "gone" },
    });
    expect(state?.status).toBe("done");
    expect(state?.callback).toMatchObject({ status: "failed", attempts: 1 });
    const after = transition(state, {
      ...base,
      id: "c3",
      type: "callback.delivered",
      data: { attempts: 2 },
    });
    expect(after.applied).toBe(false);
  });

  test("callback.redelivery_requested re-opens a settled callback, never the status", () => {
    let state: JobState = replay([requested(true), statusEvents["job.done"] as JobEvent]);
    const request: JobEvent = {
      ...base,
      id: "r1",
      type: "callback.redelivery_requested",
      data: { attempts: 2, requested_by: "ops" },
    };
    // Pending (still retrying): a redelivery request is not legal.
    const early = transition(state, request);
    expect(early.applied === false && early.reason).toBe("illegal_transition");
    state = evolve(state, {
      ...base,
      id: "c1",
      type: "callback.attempted",
      data: { attempt: 2, status_code: 410, duration_ms: 4 },
    });
    state = evolve(state, {
      ...base,
      id: "c2",
      type: "callback.failed",
      data: { attempts: 2, reason: "gone" },
    });
    const reopened = transition(state, request);
    expect(reopened.applied).toBe(true);
    expect(reopened.state?.status).toBe("done");
    expect(reopened.state?.callback).toEqual({
      status: "pending",
      attempts: 2,
      last_attempt_at: T1,
    });
    const delivered = evolve(reopened.state, {
      ...base,
      id: "c3",
      type: "callback.delivered",
      data: { attempts: 3 },
    });
    expect(delivered?.callback).toMatchObject({ status: "delivered", attempts: 3 });
    const none = transition(evolve(null, requested(false)), request);
    expect(none.applied === false && none.reason).toBe("no_callback_pending");
    expect(transition(null, request).applied).toBe(false);
  });

  test("callback events on a job without callback_url are ignored", () => {
    const state = evolve(null, requested(false));
    const result = transition(state, {
      ...base,
      id: "c",
      type: "callback.delivered",
      data: { attempts: 1 },
    });
    expect(result.applied === false && result.reason).toBe("no_callback_pending");
  });

  test("replay folds in order; a late event after a final one changes nothing", () => {
    const state = replay([
      requested(),
      statusEvents["job.dispatched"] as JobEvent,
      statusEvents["job.running"] as JobEvent,
      statusEvents["job.done"] as JobEvent,
      statusEvents["job.error"] as JobEvent,
    ]);
    expect(state?.status).toBe("done");
    expect(state?.error).toBeUndefined();
  });
});
