import type { JetStreamManager } from "@nats-io/jetstream";
import { parseIsoMs } from "../../shared/clock/index.ts";
import type { JobState, JobView } from "../../shared/domain/index.ts";
import { foldHistory, GenerationalMap, isSettledView } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import {
  type Fence,
  type HeldJob,
  ProjectionFencedError,
  type ReadModel,
  type WriteBatch,
} from "../../shared/projection/index.ts";
import {
  type CountDelta,
  IndexFencedError,
  type IndexRow,
  type IndexStore,
  type JobKey,
} from "../../shared/search/index.ts";
import { countChanges, foldRow, type RowFold, rowOf, tenantOf } from "./fold.ts";
import type { IndexPartitionState } from "./housekeeping.ts";

export interface IndexModelDeps {
  readonly jsm: JetStreamManager;
  /**
   * A job's creation time (its run.requested's, epoch ms) read from the stream; undefined when
   * it has none. The row's key holds it: a job none of whose held events carries it, and that
   * this process has not seen, is found with it.
   */
  readonly readCreatedMs: (job: { clientId: string; jobId: string }) => Promise<number | undefined>;
  /** The partition this model indexes: its stream, and its position and owner in the store. */
  readonly partition: number;
  readonly stream: string;
  readonly store: IndexStore;
  readonly logger: Logger;
  readonly now?: () => number;
}

/**
 * The search index as a read model, with the stream position it has reached, and what the
 * process's housekeeping (housekeeping.ts) reads for its heartbeat.
 */
export interface IndexModel extends ReadModel<RowFold>, IndexPartitionState {
  /** Every event at or below this sequence is in the index. */
  appliedSeq(): number;
}

/**
 * The search index as a read model (docs/architecture.md, "The search index"): rows folded with
 * the same `transition` as the job view, written in one transaction per round together with the
 * stream position reached. At each lead the durable is taken again at that position, so whatever
 * a killed indexer had not committed comes again, in order, and nothing committed is applied
 * twice (rows carry the last applied sequence; counts change only with a row). Its writes are
 * fenced by the store's own claim: a newer indexer's claim refuses this one's.
 */
export function createIndexModel(deps: IndexModelDeps): IndexModel {
  const { logger, store } = deps;
  const now = deps.now ?? Date.now;
  /** Rows this process wrote for jobs not settled yet: their next event needs no read. */
  let unsettled = new GenerationalMap<JobView>(20_000);
  /** Creation times of jobs this process wrote or read: a later event's read needs no other. */
  const createdOf = new GenerationalMap<number>(20_000);
  let applied = 0;
  /** The highest sequence of any row in the store, as far as this indexer knows. */
  let written = 0;
  /**
   * `written` when the current consumer started: a run.requested above it, delivered once, is of
   * a job without a row (the `.run` subject holds one message per job, and it comes first), so
   * its row is not read. Below it, a row an earlier consumer wrote may exist.
   */
  let noRowAbove = Number.POSITIVE_INFINITY;
  /** The events stream's creation time: the index's sequences are of this stream. */
  let stream = "";
  /** This indexer's epoch (store.claim): a newer indexer fences this one's writes. */
  let owner = 0;
  let lastWrite = 0;
  let lastPending = 0;
  /** Set at each lead: undefined until the model first opens. */
  let fence: Fence | undefined;

  const row = (stored: JobState): RowFold => ({ stored, view: stored, tenant: undefined });

  /** The row is surely absent or cached here: no read. Undefined: it must be read. */
  const known = (job: HeldJob<RowFold>): RowFold | undefined => {
    if (job.heal) return undefined;
    const first = job.events[0];
    const fresh =
      !job.retried &&
      first?.event.type === "run.requested" &&
      !first.msg.info.redelivered &&
      first.msg.seq > noRowAbove;
    if (fresh) return row(null);
    const cached = unsettled.get(job.key);
    return cached === undefined ? undefined : row(cached);
  };

  /**
   * The job's creation time: from its held events (its run.requested, or the run summary of a
   * final event), from what this process saw of it, or from the stream. Undefined: no such job.
   */
  const createdMsOf = (job: HeldJob<RowFold>): number | Promise<number | undefined> => {
    for (const { event } of job.events) {
      if (event.type === "run.requested") return parseIsoMs(event.occurred_at);
      const run = "run" in event.data ? event.data.run : undefined;
      if (run !== undefined) return parseIsoMs(run.created_at);
    }
    return (
      createdOf.get(job.key) ?? deps.readCreatedMs({ clientId: job.clientId, jobId: job.jobId })
    );
  };

  const load = async (jobs: readonly HeldJob<RowFold>[]) => {
    const states = jobs.map(known);
    const unknown = jobs.filter((_, i) => states[i] === undefined);
    if (unknown.length === 0) return states;
    const created = await Promise.all(unknown.map(createdMsOf));
    const keys: JobKey[] = [];
    unknown.forEach((job, i) => {
      const createdMs = created[i];
      if (createdMs === undefined) return;
      createdOf.set(job.key, createdMs);
      keys.push({ clientId: job.clientId, createdMs, jobId: job.jobId });
    });
    const rows = await store.load(keys);
    return jobs.map((job, i) => states[i] ?? row(rows.get(job.key) ?? null));
  };

  const write = async (batch: WriteBatch<RowFold>) => {
    const at = now();
    const rows: IndexRow[] = [];
    const counts = new Map<string, CountDelta>();
    for (const job of batch.jobs) {
      const fold = job.state;
      const next = rowOf(fold);
      if (next === undefined) continue;
      rows.push(next);
      countChanges(fold.stored, next.view, counts);
    }
    const position = Math.max(applied, batch.position());
    lastPending = batch.pending;
    // Nothing new (events the index had already): no transaction, but the jobs are done with.
    if (rows.length > 0 || position !== applied) {
      try {
        await store.apply({
          rows,
          counts: [...counts.values()].filter((c) => c.delta !== 0),
          position: { appliedSeq: position, pending: batch.pending, updatedMs: at, stream },
          partition: deps.partition,
          owner,
        });
      } catch (err) {
        // Another indexer runs now (run one): this one stops, leaving its work to it.
        if (err instanceof IndexFencedError) throw new ProjectionFencedError(err.message);
        throw err;
      }
      lastWrite = at;
      for (const r of rows) written = Math.max(written, r.view.seq);
    }
    for (const job of batch.jobs) {
      const view = job.state.view;
      if (view !== null) createdOf.set(job.key, parseIsoMs(view.created_at));
      if (view === null || isSettledView(view)) unsettled.delete(job.key);
      else unsettled.set(job.key, view);
    }
    applied = position;
    return batch.jobs.map(() => true);
  };

  return {
    name: "indexer",
    partition: deps.partition,
    async open(leading) {
      fence = undefined;
      // A new lead: what this process cached under an earlier one may be stale (another indexer
      // wrote since), so it starts from the store alone.
      unsettled = new GenerationalMap<JobView>(20_000);
      owner = await store.claim(deps.partition);
      stream = (await deps.jsm.streams.info(deps.stream)).created;
      const stored = await store.position(deps.partition);
      applied = stored.appliedSeq;
      written = stored.writtenSeq;
      if (stored.stream !== "" && stored.stream !== stream) {
        // Sequences of another stream (a new NATS store, another hub): start over from this one.
        logger.warn(
          { indexed: stored.stream, stream },
          "the index is of another events stream; rebuilding it",
        );
        await store.reset();
        // The reset fenced every writer, this one too: it claims again.
        owner = await store.claim(deps.partition);
        applied = 0;
        written = 0;
      }
      fence = leading;
    },
    resumeFrom() {
      noRowAbove = written;
      return applied + 1;
    },
    load,
    fold: foldRow,
    replay: (state, history) => ({
      stored: state.stored,
      view: foldHistory(history),
      tenant: history.map((h) => tenantOf(h.event)).find((t) => t !== undefined),
    }),
    settled: (state) => state.view !== null && isSettledView(state.view),
    write,
    holding: () => fence?.holding() === true,
    owner: () => owner,
    fenced() {
      fence?.refused("the index was reset, or another indexer claimed it");
      fence = undefined;
    },
    lastWriteMs: () => lastWrite,
    pending: () => lastPending,
    beaten(at) {
      lastWrite = at;
    },
    appliedSeq: () => applied,
  };
}
