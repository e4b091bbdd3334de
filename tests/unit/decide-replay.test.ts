/**
 * Accepting a run whose job id is taken, given/when/then: given what the job id holds, when a run
 * with a fingerprint arrives, then replay or conflict (shared/domain decideReplay).
 */
import { describe, expect, test } from "bun:test";
import {
  decideReplay,
  evolve,
  type JobView,
  type RunRequested,
} from "../../shared/domain/index.ts";

const FIRST = "a".repeat(64);
const OTHER = "b".repeat(64);

const run: RunRequested = {
  id: "e0",
  type: "run.requested",
  schema_version: 1,
  job_id: "job_a",
  client_id: "acme",
  occurred_at: "2026-01-01T00:00:00.000Z",
  data: { request_id: "r1", route: "demo.echo", input: "hello", fingerprint: FIRST },
};

describe("decideReplay", () => {
  test("given a stored run, when the same body arrives, then it is a replay", () => {
    expect(decideReplay(run.data, FIRST)).toEqual({ kind: "replay" });
  });

  test("given a stored run, when another body arrives, then it conflicts naming the request_id", () => {
    expect(decideReplay(run.data, OTHER)).toEqual({ kind: "conflict", request_id: "r1" });
  });

  test("given the job's view, when the same body arrives, then it is a replay", () => {
    const view = evolve(null, run) as JobView;
    expect(decideReplay(view, FIRST)).toEqual({ kind: "replay" });
    expect(decideReplay(view, OTHER)).toEqual({ kind: "conflict", request_id: "r1" });
  });
});
