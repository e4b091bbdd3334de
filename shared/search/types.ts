import type { JobStatus, JobView } from "../domain/index.ts";

/**
 * The search index: a second projection of the events stream into a query engine (SQLite or
 * PostgreSQL), for listing and searching jobs (docs/architecture.md, "The search index"). The
 * indexer is its only writer; the Client API list and the operator API read it.
 */

/** Filters of a job search. Every list is OR within itself; filters combine with AND. */
export interface JobFilter {
  readonly clientIds?: readonly string[];
  readonly statuses?: readonly JobStatus[];
  readonly routes?: readonly string[];
  readonly errorCodes?: readonly string[];
  /** metadata.principal.tenant of the run. */
  readonly tenants?: readonly string[];
  readonly requestId?: string;
  /** These jobs only (by key). */
  readonly jobs?: readonly JobKey[];
  readonly callbackStatuses?: readonly ("pending" | "delivered" | "failed")[];
  /** created_at ≥ this (epoch ms). */
  readonly createdFromMs?: number;
  /** created_at < this (epoch ms). */
  readonly createdBeforeMs?: number;
}

/**
 * What finds a job's row: its client, its creation time (its run.requested's, epoch ms) and its
 * id. The creation time is in the key so that new rows land at its end (sql.ts).
 */
export interface JobKey {
  readonly clientId: string;
  readonly createdMs: number;
  readonly jobId: string;
}

/** A position in the newest-first order (created_at, job_id): the last row of a page. */
export interface PagePosition {
  readonly createdMs: number;
  readonly jobId: string;
}

export interface PageQuery {
  readonly filter: JobFilter;
  readonly limit: number;
  /** Continue after this position. */
  readonly after?: PagePosition;
}

export interface Page {
  readonly views: readonly JobView[];
  /** The position to continue from, or null on the last page. */
  readonly next: PagePosition | null;
}

/** What the counts table adds up: jobs by creation minute, final statuses, callback outcomes. */
export type CountKind = "created" | "completed" | "callback";

/** One change of the counts: `delta` jobs of (kind, minute, client, route, status). */
export interface CountDelta {
  readonly kind: CountKind;
  readonly minute: number;
  readonly clientId: string;
  readonly route: string;
  readonly status: string;
  readonly delta: number;
}

export interface CountRow {
  readonly route: string;
  readonly status: string;
  readonly count: number;
}

export interface CountQuery {
  readonly kind: CountKind;
  /** Minutes since the epoch, inclusive. */
  readonly fromMinute: number;
  /** Minutes since the epoch, exclusive. */
  readonly toMinute: number;
  readonly clientIds?: readonly string[];
}

/** Where the index stands in the stream. */
export interface IndexPosition {
  /** Every event at or below this stream sequence is in the index. */
  readonly appliedSeq: number;
  /** Events the indexer's consumer still had pending at its last round. */
  readonly pending: number;
  /** When the indexer last wrote (a heartbeat while idle); epoch ms, 0 when never. */
  readonly updatedMs: number;
  /** Which events stream the sequences are of (its creation time): another one means rebuild. */
  readonly stream: string;
}

/** One partition's heartbeat: its consumer's pending count at its last round. */
export interface IndexBeat {
  readonly partition: number;
  /** The writer's epoch from claim(): a beat of an older epoch is refused like a write. */
  readonly owner: number;
  readonly pending: number;
}

/** The position as stored, with what the indexer needs to skip reads. */
export interface StoredPosition extends IndexPosition {
  /**
   * The highest stream sequence of any row written. Rows above `appliedSeq` exist (a job written
   * while an older one was still held), none above this: a job whose first event comes later
   * has no row, and the indexer does not read one.
   */
  readonly writtenSeq: number;
}

/** The position of an index nothing was written to. */
export const EMPTY_POSITION: StoredPosition = {
  appliedSeq: 0,
  pending: 0,
  updatedMs: 0,
  stream: "",
  writtenSeq: 0,
};

/** One job row as the indexer writes it. */
export interface IndexRow {
  readonly view: JobView;
  /** From the run.requested; undefined keeps what the row holds (a later event's write). */
  readonly tenant: string | undefined;
}

/** One transaction of the indexer: rows, count changes and the new position. */
export interface IndexWrite {
  /** The partition whose indexer writes (default 0): its own position and owner epoch. */
  readonly partition?: number;
  /** The writer's epoch from claim(): a write of an older epoch is refused (IndexFencedError). */
  readonly owner: number;
  readonly rows: readonly IndexRow[];
  readonly counts: readonly CountDelta[];
  readonly position: IndexPosition;
}

/** The stored side of the index; one implementation per query engine, one test suite for both. */
export interface IndexStore {
  readonly backend: "sqlite" | "postgres";
  /** Creates the tables and indexes if missing. */
  migrate(): Promise<void>;
  /** The views of these jobs as stored (absent: not indexed yet). Keys are `<client>.<job>`. */
  load(keys: readonly JobKey[]): Promise<Map<string, JobView>>;
  /**
   * Makes the caller the index's only writer: a new epoch, after which writes of every older one
   * are refused. An indexer claims at start; a second one (or a stalled first one) is fenced.
   */
  claim(partition?: number): Promise<number>;
  /** Writes rows, counts and position in one transaction; throws IndexFencedError if claimed since. */
  apply(write: IndexWrite): Promise<void>;
  /**
   * One partition's position; without one, the whole index's: pending summed over the partitions,
   * updated at the oldest partition's write, the rest partition 0's (a single-partition hub's).
   */
  position(partition?: number): Promise<StoredPosition>;
  /**
   * Only moves updated_ms and pending of each partition named, in one write: the indexer's
   * heartbeat while idle, for every partition a process holds at once. Answers the partitions
   * whose beat was refused (claimed or reset since its owner's claim), so that an idle indexer
   * learns it was fenced without waiting for its next write.
   */
  heartbeat(beats: readonly IndexBeat[], nowMs: number): Promise<readonly number[]>;
  page(query: PageQuery): Promise<Page>;
  /** How many jobs match (for a bulk action's dry run), counting at most `cap` + 1. */
  count(filter: JobFilter, cap: number): Promise<number>;
  counts(query: CountQuery): Promise<CountRow[]>;
  /** The clients with indexed jobs, in id order (one search of the key per client). */
  clients(): Promise<string[]>;
  /** Totals per minute of the window (minutes without jobs are absent). */
  perMinute(query: CountQuery): Promise<Map<number, number>>;
  /** Every indexed view in key order, for `audit verify`. */
  scan(batch: number): AsyncIterable<JobView>;
  /** Deletes jobs created before this time, and their counts (the stream's retention). */
  prune(beforeMs: number): Promise<number>;
  /** Refreshes the query planner's statistics (after a rebuild, and hourly by the indexer). */
  optimize(): Promise<void>;
  /**
   * Empties the index and fences every writer in one transaction (`switchyard index rebuild`): an
   * indexer writing now is refused at its next write, leads again and rebuilds from the start.
   */
  reset(): Promise<void>;
  close(): Promise<void>;
}

/** The key the index and the job view share: `<client_id>.<job_id>`. */
export function indexKey(clientId: string, jobId: string): string {
  return `${clientId}.${jobId}`;
}

/** Another indexer claimed the index since this one did: it must stop writing. */
export class IndexFencedError extends Error {
  readonly code = "index_fenced";
  constructor(owner: number, current: number) {
    super(`another indexer took over the search index (epoch ${current}, this one ${owner})`);
    this.name = "IndexFencedError";
  }
}
