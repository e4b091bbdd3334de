import { AUDIT_SUBJECT_ROOT, EVENT_SUBJECT_ROOT, TOPOLOGY } from "../bus/index.ts";
import type { EventStreamKind } from "../domain/index.ts";
import { partitionOf } from "./partition.ts";
import type { JobRef } from "./subjects.ts";

/** The most partitions a hub may be created with (nats.partitions). */
export const MAX_PARTITIONS = 256;

/** Subject filters for reading one partition's stream (or the stream a job lives in). */
export interface LayoutFilters {
  /** Every subject of one job. */
  job(ref: JobRef): string;
  /** Every subject of a job whose client is not known yet. */
  anyClientJob(jobId: string): string;
  /** The run.requested of a job whose client is not known yet. */
  anyClientRun(jobId: string): string;
  /** Every job event of one client in partition p. */
  client(p: number, clientId: string): string;
  /** One kind of subject across all jobs of partition p. */
  kind(p: number, kind: EventStreamKind): string;
  /** Every job event of partition p. */
  all(p: number): string;
}

/**
 * Every JetStream name of the event log, for a hub of P partitions. P = 1 (and every store written
 * before partitions) has exactly the names of a single log: stream SWITCHYARD_EVENTS over sy.evt.>
 * and sy.audit.>, bucket sy_jobs, lease keys as given. P > 1 gives partition p its own stream
 * (SWITCHYARD_EVENTS_P<p>, its own raft group and leader), subjects under sy.evt.p<p> and
 * sy.audit.p<p>, view bucket sy_jobs_p<p> and lease keys `<name>.p<p>`. Durable consumer names
 * are per stream, so they stay as they are.
 */
export interface EventLayout {
  readonly partitions: number;
  /** The partition of a job, from its id alone. */
  partitionOf(ref: Pick<JobRef, "job_id">): number;
  stream(p: number): string;
  /** Every partition's stream, in partition order. */
  streams(): readonly string[];
  /** The stream a job's events live in. */
  streamOf(ref: Pick<JobRef, "job_id">): string;
  /** Root of partition p's job event subjects (no trailing dot). */
  eventRoot(p: number): string;
  /** Root of partition p's audit subjects (no trailing dot). */
  auditRoot(p: number): string;
  checkpointSubject(p: number): string;
  /** The subject an event of the job and kind is appended to. */
  subject(ref: JobRef, kind: EventStreamKind): string;
  readonly filters: LayoutFilters;
  viewBucket(p: number): string;
  /** The view bucket of the partition a job lives in. */
  viewBucketOf(ref: Pick<JobRef, "job_id">): string;
  leaseKey(name: string, p: number): string;
  /** The job of an event subject of any partition; undefined for a subject that is not a job's. */
  refOfSubject(subject: string): JobRef | undefined;
  /** The partition an event or audit subject belongs to; undefined for a foreign subject. */
  partitionOfSubject(subject: string): number | undefined;
}

/** The typed error for a partition count outside 1..MAX_PARTITIONS. */
export class InvalidPartitionsError extends Error {
  readonly code = "invalid_partitions";
  constructor(readonly partitions: number) {
    super(`nats.partitions must be an integer from 1 to ${MAX_PARTITIONS}; got ${partitions}`);
    this.name = "InvalidPartitionsError";
  }
}

const EVT_PREFIX = `${EVENT_SUBJECT_ROOT}.`;

/**
 * The job of an event subject of either shape (`sy.evt.<client>.<job>.<kind>` or
 * `sy.evt.p<p>.<client>.<job>.<kind>`); undefined for a subject that is not a job's.
 */
export function jobRefOfEventSubject(subject: string): JobRef | undefined {
  if (!subject.startsWith(EVT_PREFIX)) return undefined;
  const tokens = subject.split(".");
  const at = tokens.length === 6 && /^p[0-9]+$/.test(tokens[2] ?? "") ? 3 : 2;
  const client_id = tokens[at];
  const job_id = tokens[at + 1];
  if (client_id === undefined || job_id === undefined || tokens.length !== at + 3) return undefined;
  return { client_id, job_id };
}

/** P = 1: today's names, bit for bit. */
function singleLayout(): EventLayout {
  const root = EVENT_SUBJECT_ROOT;
  const streams = [TOPOLOGY.eventsStream] as const;
  return {
    partitions: 1,
    partitionOf: () => 0,
    stream: () => TOPOLOGY.eventsStream,
    streams: () => streams,
    streamOf: () => TOPOLOGY.eventsStream,
    eventRoot: () => root,
    auditRoot: () => AUDIT_SUBJECT_ROOT,
    checkpointSubject: () => `${AUDIT_SUBJECT_ROOT}.checkpoint`,
    subject: (ref, kind) => `${root}.${ref.client_id}.${ref.job_id}.${kind}`,
    filters: {
      job: (ref) => `${root}.${ref.client_id}.${ref.job_id}.*`,
      anyClientJob: (jobId) => `${root}.*.${jobId}.*`,
      anyClientRun: (jobId) => `${root}.*.${jobId}.run`,
      client: (_p, clientId) => `${root}.${clientId}.>`,
      kind: (_p, kind) => `${root}.*.*.${kind}`,
      all: () => `${root}.>`,
    },
    viewBucket: () => TOPOLOGY.jobsBucket,
    viewBucketOf: () => TOPOLOGY.jobsBucket,
    leaseKey: (name) => name,
    refOfSubject(subject) {
      const [root0, evt, client_id, job_id, kind] = subject.split(".");
      if (`${root0}.${evt}` !== root || job_id === undefined || kind === undefined)
        return undefined;
      return client_id === undefined ? undefined : { client_id, job_id };
    },
    partitionOfSubject: (subject) =>
      subject.startsWith(EVT_PREFIX) || subject.startsWith(`${AUDIT_SUBJECT_ROOT}.`)
        ? 0
        : undefined,
  };
}

/** The partition of a `<root>.p<p>.` subject, or undefined. */
function partitionToken(subject: string, prefix: string, partitions: number): number | undefined {
  if (!subject.startsWith(prefix) || subject.charCodeAt(prefix.length) !== 112 /* p */) {
    return undefined;
  }
  const end = subject.indexOf(".", prefix.length);
  const p = Number(subject.slice(prefix.length + 1, end < 0 ? undefined : end));
  return Number.isInteger(p) && p >= 0 && p < partitions ? p : undefined;
}

/** P > 1: one stream, subject root, bucket and lease key per partition. */
function partitionedLayout(partitions: number): EventLayout {
  const eventRoots = Array.from({ length: partitions }, (_, p) => `${EVENT_SUBJECT_ROOT}.p${p}`);
  const streams = eventRoots.map((_, p) => `${TOPOLOGY.eventsStream}_P${p}`);
  const buckets = eventRoots.map((_, p) => `${TOPOLOGY.jobsBucket}_p${p}`);
  const rootOf = (jobId: string) => eventRoots[partitionOf(jobId, partitions)];
  const partitionOfSubject = (subject: string) =>
    partitionToken(subject, EVT_PREFIX, partitions) ??
    partitionToken(subject, `${AUDIT_SUBJECT_ROOT}.`, partitions);
  return {
    partitions,
    partitionOf: (ref) => partitionOf(ref.job_id, partitions),
    stream: (p) => streams[p] ?? `${TOPOLOGY.eventsStream}_P${p}`,
    streams: () => streams,
    streamOf: (ref) => streams[partitionOf(ref.job_id, partitions)] as string,
    eventRoot: (p) => `${EVENT_SUBJECT_ROOT}.p${p}`,
    auditRoot: (p) => `${AUDIT_SUBJECT_ROOT}.p${p}`,
    checkpointSubject: (p) => `${AUDIT_SUBJECT_ROOT}.p${p}.checkpoint`,
    subject: (ref, kind) => `${rootOf(ref.job_id)}.${ref.client_id}.${ref.job_id}.${kind}`,
    filters: {
      job: (ref) => `${rootOf(ref.job_id)}.${ref.client_id}.${ref.job_id}.*`,
      anyClientJob: (jobId) => `${rootOf(jobId)}.*.${jobId}.*`,
      anyClientRun: (jobId) => `${rootOf(jobId)}.*.${jobId}.run`,
      client: (p, clientId) => `${EVENT_SUBJECT_ROOT}.p${p}.${clientId}.>`,
      kind: (p, kind) => `${EVENT_SUBJECT_ROOT}.p${p}.*.*.${kind}`,
      all: (p) => `${EVENT_SUBJECT_ROOT}.p${p}.>`,
    },
    viewBucket: (p) => buckets[p] ?? `${TOPOLOGY.jobsBucket}_p${p}`,
    viewBucketOf: (ref) => buckets[partitionOf(ref.job_id, partitions)] as string,
    leaseKey: (name, p) => `${name}.p${p}`,
    refOfSubject(subject) {
      if (partitionToken(subject, EVT_PREFIX, partitions) === undefined) return undefined;
      const [, , , client_id, job_id, kind] = subject.split(".");
      if (client_id === undefined || job_id === undefined || kind === undefined) return undefined;
      return { client_id, job_id };
    },
    partitionOfSubject,
  };
}

const SINGLE = singleLayout();

/** The layout of a hub with `partitions` partitions (1..MAX_PARTITIONS). */
export function createEventLayout(partitions: number): EventLayout {
  if (!Number.isInteger(partitions) || partitions < 1 || partitions > MAX_PARTITIONS) {
    throw new InvalidPartitionsError(partitions);
  }
  return partitions === 1 ? SINGLE : partitionedLayout(partitions);
}

/** The layout of a single-partition hub (every store written before partitions). */
export const SINGLE_PARTITION_LAYOUT: EventLayout = SINGLE;
