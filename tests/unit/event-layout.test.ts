/**
 * The partitioned event log's names (shared/jobs/layout.ts) and a job's partition
 * (shared/jobs/partition.ts): P = 1 is exactly the single log's names; P > 1 gives every
 * partition its own stream, subjects, bucket and lease key, found from the job id alone.
 */
import { describe, expect, test } from "bun:test";
import { PartitionsMismatchError } from "../../shared/bus/index.ts";
import { createJobIdDeriver } from "../../shared/ids/index.ts";
import {
  createEventLayout,
  InvalidPartitionsError,
  jobRefOfEventSubject,
  partitionOf,
} from "../../shared/jobs/index.ts";

const ref = { client_id: "acme", job_id: "job_AAAAAAAAAAAAAAAAAAAAAA" };

describe("partitionOf", () => {
  test("decodes the 4 base64url characters after job_ (24 bits, big-endian) mod P", () => {
    // "AAAB" = 1, "AABA" = 64, "BAAA" = 2^18, "____" = 2^24 - 1.
    expect(partitionOf("job_AAABxxxxxxxxxxxxxxxxxx", 1_000)).toBe(1);
    expect(partitionOf("job_AABAxxxxxxxxxxxxxxxxxx", 1_000)).toBe(64);
    expect(partitionOf("job_BAAAxxxxxxxxxxxxxxxxxx", 1 << 20)).toBe(1 << 18);
    expect(partitionOf("job_____xxxxxxxxxxxxxxxxxx", 1 << 24)).toBe((1 << 24) - 1);
    expect(partitionOf("job_-AAAxxxxxxxxxxxxxxxxxx", 256)).toBe((62 << 18) % 256);
  });

  test("P = 1 is always partition 0", () => {
    expect(partitionOf("job_____xxxxxxxxxxxxxxxxxx", 1)).toBe(0);
  });

  test("derived job ids spread over every partition, and a retry lands in the same one", () => {
    const deriveJobId = createJobIdDeriver(new Uint8Array(32).fill(7));
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 400; i++) {
      const id = deriveJobId("acme", `req-${i}`);
      const p = partitionOf(id, 4);
      counts[p] = (counts[p] ?? 0) + 1;
      expect(partitionOf(deriveJobId("acme", `req-${i}`), 4)).toBe(p);
    }
    for (const count of counts) expect(count).toBeGreaterThan(50);
  });
});

describe("P = 1: exactly the single log's names", () => {
  const layout = createEventLayout(1);
  test("stream, subjects, bucket, lease key, checkpoint subject", () => {
    expect(layout.partitions).toBe(1);
    expect(layout.streams()).toEqual(["SWITCHYARD_EVENTS"]);
    expect(layout.streamOf(ref)).toBe("SWITCHYARD_EVENTS");
    expect(layout.eventRoot(0)).toBe("sy.evt");
    expect(layout.auditRoot(0)).toBe("sy.audit");
    expect(layout.checkpointSubject(0)).toBe("sy.audit.checkpoint");
    expect(layout.subject(ref, "run")).toBe(`sy.evt.acme.${ref.job_id}.run`);
    expect(layout.viewBucket(0)).toBe("sy_jobs");
    expect(layout.leaseKey("projector", 0)).toBe("projector");
  });
  test("filters", () => {
    expect(layout.filters.job(ref)).toBe(`sy.evt.acme.${ref.job_id}.*`);
    expect(layout.filters.anyClientJob(ref.job_id)).toBe(`sy.evt.*.${ref.job_id}.*`);
    expect(layout.filters.anyClientRun(ref.job_id)).toBe(`sy.evt.*.${ref.job_id}.run`);
    expect(layout.filters.client(0, "acme")).toBe("sy.evt.acme.>");
    expect(layout.filters.kind(0, "job")).toBe("sy.evt.*.*.job");
    expect(layout.filters.all(0)).toBe("sy.evt.>");
  });
  test("refOfSubject", () => {
    expect(layout.refOfSubject(`sy.evt.acme.${ref.job_id}.cb`)).toEqual(ref);
    expect(layout.refOfSubject("sy.audit.checkpoint")).toBeUndefined();
    expect(layout.refOfSubject("sy.evt.acme")).toBeUndefined();
  });
});

describe("P > 1: a stream, subject root, bucket and lease key per partition", () => {
  const layout = createEventLayout(4);
  const p = partitionOf(ref.job_id, 4);
  test("names of partition p", () => {
    expect(layout.streams()).toEqual([0, 1, 2, 3].map((i) => `SWITCHYARD_EVENTS_P${i}`));
    expect(layout.eventRoot(3)).toBe("sy.evt.p3");
    expect(layout.auditRoot(3)).toBe("sy.audit.p3");
    expect(layout.checkpointSubject(3)).toBe("sy.audit.p3.checkpoint");
    expect(layout.viewBucket(3)).toBe("sy_jobs_p3");
    expect(layout.leaseKey("projector", 3)).toBe("projector.p3");
  });
  test("a job's names come from its id alone", () => {
    expect(layout.partitionOf(ref)).toBe(p);
    expect(layout.streamOf(ref)).toBe(`SWITCHYARD_EVENTS_P${p}`);
    expect(layout.viewBucketOf(ref)).toBe(`sy_jobs_p${p}`);
    expect(layout.subject(ref, "job")).toBe(`sy.evt.p${p}.acme.${ref.job_id}.job`);
    expect(layout.filters.job(ref)).toBe(`sy.evt.p${p}.acme.${ref.job_id}.*`);
    expect(layout.filters.anyClientRun(ref.job_id)).toBe(`sy.evt.p${p}.*.${ref.job_id}.run`);
    expect(layout.filters.kind(2, "run")).toBe("sy.evt.p2.*.*.run");
    expect(layout.filters.client(1, "acme")).toBe("sy.evt.p1.acme.>");
    expect(layout.filters.all(1)).toBe("sy.evt.p1.>");
  });
  test("subjects parse back to the job and partition", () => {
    expect(layout.refOfSubject(layout.subject(ref, "run"))).toEqual(ref);
    expect(layout.partitionOfSubject(layout.subject(ref, "run"))).toBe(p);
    expect(layout.partitionOfSubject("sy.audit.p2.checkpoint")).toBe(2);
    expect(layout.partitionOfSubject("sy.evt.p9.acme.x.run")).toBeUndefined();
    expect(layout.refOfSubject(`sy.evt.acme.${ref.job_id}.run`)).toBeUndefined();
    expect(jobRefOfEventSubject(layout.subject(ref, "cb"))).toEqual(ref);
    expect(jobRefOfEventSubject(`sy.evt.acme.${ref.job_id}.cb`)).toEqual(ref);
  });
});

describe("partition counts", () => {
  test("outside 1..256 is refused, naming the key", () => {
    for (const bad of [0, 257, 1.5]) {
      expect(() => createEventLayout(bad)).toThrow(InvalidPartitionsError);
    }
    expect(() => createEventLayout(0)).toThrow(/nats\.partitions/);
  });
  test("the mismatch error names nats.partitions, both counts and the doc section", () => {
    const err = new PartitionsMismatchError(4, 1);
    expect(err.code).toBe("partitions_mismatch");
    expect(err.message).toContain("nats.partitions is 4");
    expect(err.message).toContain("created with 1 partitions");
    expect(err.message).toContain('docs/deploy.md, "Choosing partitions"');
  });
});
