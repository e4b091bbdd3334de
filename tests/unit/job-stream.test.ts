/**
 * The job stream's pure parts (shared/jobs): the envelope every append uses, the subjects and view
 * key a JobRef names, and the stored view's codec.
 */
import { describe, expect, test } from "bun:test";
import { checkEvent } from "../../shared/bus/index.ts";
import { manualClock } from "../../shared/clock/index.ts";
import { evolve, type JobView } from "../../shared/domain/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import {
  jobViewCodec,
  jobViewKey,
  newEvent,
  SINGLE_PARTITION_LAYOUT,
} from "../../shared/jobs/index.ts";

const ref = { client_id: "acme", job_id: "job_AAAAAAAAAAAAAAAAAAAAAA" };
const counting = (): IdGenerator => {
  let n = 0;
  return { next: (prefix) => `${prefix}_${++n}` };
};
const deps = { clock: manualClock("2026-01-01T00:00:00.000Z"), ids: counting() };

describe("newEvent", () => {
  test("wraps an intent in the envelope: a fresh id, version 1, the job's ids, the clock's time", () => {
    const event = newEvent(deps, ref, { type: "job.running", data: {} });
    expect(event).toEqual({
      id: "evt_1",
      type: "job.running",
      schema_version: 1,
      job_id: ref.job_id,
      client_id: ref.client_id,
      occurred_at: "2026-01-01T00:00:00.000Z",
      data: {},
    });
    // What it builds is a valid event of the union.
    expect(checkEvent(event)).toBe(event);
    expect(newEvent(deps, ref, { type: "job.running", data: {} }).id).toBe("evt_2");
  });
});

describe("subjects and keys of a JobRef", () => {
  test("an event subject names its job, and a job's subjects parse back to it", () => {
    const subject = SINGLE_PARTITION_LAYOUT.subject(ref, "run");
    expect(subject).toBe(`sy.evt.acme.${ref.job_id}.run`);
    expect(SINGLE_PARTITION_LAYOUT.refOfSubject(subject)).toEqual(ref);
    expect(jobViewKey(ref)).toBe(`acme.${ref.job_id}`);
    expect(SINGLE_PARTITION_LAYOUT.filters.job(ref)).toBe(`sy.evt.acme.${ref.job_id}.*`);
    expect(SINGLE_PARTITION_LAYOUT.filters.anyClientRun(ref.job_id)).toBe(
      `sy.evt.*.${ref.job_id}.run`,
    );
  });

  test("a subject that is not a job event's names no job", () => {
    expect(SINGLE_PARTITION_LAYOUT.refOfSubject("sy.audit.checkpoint")).toBeUndefined();
    expect(SINGLE_PARTITION_LAYOUT.refOfSubject("sy.evt.acme")).toBeUndefined();
  });
});

describe("jobViewCodec", () => {
  test("a view survives the KV bytes and the index text unchanged", () => {
    const run = newEvent(deps, ref, {
      type: "run.requested",
      data: { request_id: "r1", route: "demo.echo", input: "hi", fingerprint: "a".repeat(64) },
    });
    const view = { ...(evolve(null, run) as JobView), seq: 7 };
    expect(jobViewCodec.decode(jobViewCodec.encode(view))).toEqual(view);
    expect(jobViewCodec.fromText(jobViewCodec.toText(view))).toEqual(view);
  });
});
