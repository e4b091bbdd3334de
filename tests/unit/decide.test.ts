import { describe, expect, test } from "bun:test";
import {
  deadlineExceeded,
  decideAdmission,
  decideStatus,
  type JobEvent,
  type JobStatus,
  recordAttempt,
  replay,
  reportIntent,
  type StatusDecision,
  type StatusIntent,
  transition,
} from "../../shared/domain/index.ts";

// decide(command, state) given/when/then: the state is what the job's events fold to; the
// command is the status event a writer wants; the answer is the event to append or the refusal.

const T0 = "2026-01-01T00:00:00.000Z";
const T1 = "2026-01-01T00:00:01.000Z";
const base = { schema_version: 1 as const, job_id: "job_a", client_id: "acme", occurred_at: T1 };
const run: Extract<JobEvent, { type: "run.requested" }> = {
  ...base,
  id: "e0",
  type: "run.requested",
  occurred_at: T0,
  data: { request_id: "r1", route: "x.echo", input: "hi", fingerprint: "0".repeat(64) },
};
const status = (type: StatusIntent["type"], data: unknown): JobEvent =>
  ({ ...base, id: `e-${type}`, type, data }) as JobEvent;
const dispatched = status("job.dispatched", { target: "nats", attempt: 1 });
const running = status("job.running", {});
const done = status("job.done", { output: "ok" });

/** The status the given events fold to (the writer's view of the job). */
function given(...events: JobEvent[]): JobStatus {
  const state = replay([run, ...events]);
  if (state === null) throw new Error("no job");
  return state.status;
}

const when = (current: JobStatus, intent: StatusIntent): StatusDecision =>
  decideStatus(current, intent);

const finish: StatusIntent = { type: "job.done", data: { output: 1 } };
const fail: StatusIntent = { type: "job.error", data: { code: "x", message: "y" } };
const refuse: StatusIntent = { type: "job.rejected", data: { code: "x", message: "y" } };
const start: StatusIntent = { type: "job.running", data: {} };
const attemptFailed: StatusIntent = {
  type: "job.attempt_failed",
  data: { target: "http", attempt: 1, reason: "http_503", status_code: 503 },
};

describe("decideStatus: may a writer append this status event?", () => {
  test("given a queued job, when it finishes, then job.done is appended", () => {
    expect(when(given(), finish)).toEqual({ kind: "append", intent: finish });
  });

  test("given a finished job, when anything else arrives, then it is refused as job_final", () => {
    for (const intent of [finish, fail, refuse, start, attemptFailed, deadlineExceeded("late")]) {
      expect(when(given(done), intent)).toEqual({ kind: "refuse", reason: "job_final" });
    }
  });

  test("given a running job, when a refusal or another hand-over arrives, then it is illegal", () => {
    expect(when(given(running), refuse)).toEqual({ kind: "refuse", reason: "illegal_transition" });
    expect(when(given(running), attemptFailed)).toMatchObject({ reason: "illegal_transition" });
    expect(when(given(running), start)).toEqual({ kind: "append", intent: start });
  });

  test("given any open job, when its deadline passes, then job.error deadline_exceeded is appended", () => {
    for (const events of [[], [dispatched], [running]]) {
      const intent = deadlineExceeded("the job did not finish within its deadline");
      expect(when(given(...events), intent)).toEqual({ kind: "append", intent });
      expect(intent.data).toMatchObject({ code: "deadline_exceeded" });
    }
  });

  test("decide and evolve agree: what decide appends, evolve applies", () => {
    const intents = [finish, fail, refuse, start, attemptFailed];
    for (const events of [[], [dispatched], [running], [done]]) {
      const state = replay([run, ...events]);
      for (const intent of intents) {
        const decision = when(given(...events), intent);
        const applied = transition(state, status(intent.type, intent.data)).applied;
        expect(applied).toBe(decision.kind === "append");
      }
    }
  });
});

describe("decideAdmission", () => {
  const route = { enabled: true, maxInputBytes: 16, deadlineMs: 60_000 };
  const now = Date.parse(T0) + 1_000;

  test("given a configured route, when the run fits, then it is admitted with its deadline", () => {
    expect(decideAdmission({ run, route, inputBytes: 2, now })).toEqual({
      kind: "admit",
      deadlineAt: Date.parse(T0) + 60_000,
    });
  });

  test("given no route, a disabled one or input above its limit, then job.rejected with the reason", () => {
    const codeOf = (decision: ReturnType<typeof decideAdmission>) =>
      decision.kind === "end" ? (decision.intent.data as { code: string }).code : "admitted";
    expect(codeOf(decideAdmission({ run, route: undefined, inputBytes: 2, now }))).toBe(
      "route_unknown",
    );
    expect(
      codeOf(decideAdmission({ run, route: { ...route, enabled: false }, inputBytes: 2, now })),
    ).toBe("route_disabled");
    expect(codeOf(decideAdmission({ run, route, inputBytes: 17, now }))).toBe("input_too_large");
  });

  test("given a run that waited past its deadline, then job.error deadline_exceeded", () => {
    const late = decideAdmission({ run, route, inputBytes: 2, now: Date.parse(T0) + 60_000 });
    expect(late).toMatchObject({ kind: "end", intent: { type: "job.error" } });
  });
});

describe("reportIntent: what an executor's report asks for", () => {
  test("each report type maps to its status event", () => {
    expect(reportIntent({ type: "running" }).type).toBe("job.running");
    expect(reportIntent({ type: "done", output: 3 })).toEqual({
      type: "job.done",
      data: { output: 3 },
    });
    const error = { code: "e", message: "m" };
    expect(reportIntent({ type: "error", error })).toEqual({ type: "job.error", data: error });
    expect(reportIntent({ type: "rejected", error })).toEqual({
      type: "job.rejected",
      data: error,
    });
  });
});

describe("recordAttempt: one .cb event per attempt", () => {
  const result = { ok: true, status: 204, durationMs: 3, gone: false };
  const original = { kind: "original" } as const;
  const nowMs = Date.parse(T1);

  test("a delivery is callback.delivered carrying the attempt", () => {
    expect(
      recordAttempt({
        attempt: 1,
        result,
        outcome: { kind: "delivered" },
        trigger: original,
        nowMs,
      }),
    ).toEqual({
      type: "callback.delivered",
      data: { attempts: 1, status_code: 204, duration_ms: 3 },
    });
  });

  test("a failure with a retry is callback.attempted with next_attempt_at", () => {
    const failed = {
      ok: false,
      status: 503,
      durationMs: 2,
      gone: false,
      errorClass: "http_status",
    };
    expect(
      recordAttempt({
        attempt: 2,
        result: failed,
        outcome: { kind: "retry", delayMs: 5_000 },
        trigger: { kind: "redelivery", seq: 9, baseAttempts: 1 },
        nowMs,
      }),
    ).toEqual({
      type: "callback.attempted",
      data: {
        attempt: 2,
        status_code: 503,
        duration_ms: 2,
        error_class: "http_status",
        redelivery_seq: 9,
        next_attempt_at: "2026-01-01T00:00:06.000Z",
      },
    });
  });

  test("a final failure is callback.failed with its reason", () => {
    const gone = { ok: false, status: 410, durationMs: 1, gone: true };
    expect(
      recordAttempt({
        attempt: 1,
        result: gone,
        outcome: { kind: "failed", reason: "gone" },
        trigger: original,
        nowMs,
      }),
    ).toMatchObject({ type: "callback.failed", data: { attempts: 1, reason: "gone" } });
  });

  test("evolve reads a settling event as the last attempt", () => {
    const withCallback = { ...run, data: { ...run.data, callback_url: "https://x.example/cb" } };
    const delivered: JobEvent = {
      ...base,
      id: "e9",
      type: "callback.delivered",
      occurred_at: "2026-01-01T00:00:02.000Z",
      data: { attempts: 1, status_code: 204, duration_ms: 3 },
    };
    expect(replay([withCallback, done, delivered])?.callback).toEqual({
      status: "delivered",
      attempts: 1,
      last_attempt_at: "2026-01-01T00:00:02.000Z",
    });
  });
});
