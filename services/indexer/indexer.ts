import type {
  ConsumerMessages,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from "@nats-io/jetstream";
import {
  decodeEvent,
  type OwnedDurablePump,
  PoisonMessageError,
  pumpOwnedDurable,
  TOPOLOGY,
} from "../../shared/bus/index.ts";
import type { JobView } from "../../shared/domain/index.ts";
import {
  foldHistory,
  GenerationalMap,
  isSettledView,
  readJobHistory,
} from "../../shared/jobs/index.ts";
import { retryWhile } from "../../shared/lease/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import {
  type CountDelta,
  IndexFencedError,
  type IndexRow,
  type IndexStore,
  indexKey,
} from "../../shared/search/index.ts";
import { INDEX_CONSUMER, recreateIndexConsumer } from "./durable.ts";
import { countChanges, foldNew, type HeldJob, rowOf, tenantOf } from "./fold.ts";

export interface IndexerDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly store: IndexStore;
  readonly logger: Logger;
  /** How long a job's row waits for the job to settle before it is written anyway. */
  readonly lingerMs?: number;
  readonly maxBatch?: number;
  /** Rows of jobs created longer ago than this are pruned (the stream's retention). */
  readonly retentionMs?: number;
  readonly now?: () => number;
}

export interface Indexer {
  start(): Promise<void>;
  /** Stops taking events, writes what it holds. */
  stop(): Promise<void>;
  /** Every event at or below this sequence is in the index. */
  appliedSeq(): number;
}

const HEARTBEAT_MS = 5_000;
/**
 * Least time between two transactions while the queue is not full: events gather into one
 * transaction instead of one (of a job or two) each. A round per arriving message cost a SQLite
 * commit per ~4 events (10,000 transactions for 20,000 jobs, 0.55 ms each).
 */
const ROUND_MS = 50;
const PRUNE_MS = 3_600_000;

/**
 * The search index's projection (docs/architecture.md, "The search index"): a durable consumer
 * `index` on every job event, folded with the same `transition` as the job view, written to the
 * index store in one transaction per round together with the stream position it reached.
 *
 * Like the projector: a job's row is held until it settles or for `lingerMs` (one write per job
 * on the common path); AckPolicy.All with one ack per round, at the highest sequence below every
 * job still held. Unlike the projector, the position lives in the index itself, in the same
 * transaction as the rows: at start the durable is recreated at that position, so whatever a
 * killed indexer had not committed comes again, in order, and nothing committed is applied twice
 * (rows carry the last applied sequence; counts change only with a row). Run one indexer.
 */
export function createIndexer(deps: IndexerDeps): Indexer {
  const { logger, store } = deps;
  const now = deps.now ?? Date.now;
  const lingerMs = deps.lingerMs ?? 100;
  const maxBatch = deps.maxBatch ?? 500;
  const held = new Map<string, HeldJob>();
  /** Rows this process wrote for jobs not settled yet: their next event needs no read. */
  let unsettled = new GenerationalMap<JobView>(20_000);
  let delivered: JsMsg[] = [];
  let queue: JsMsg[] = [];
  let messages: ConsumerMessages | undefined;
  let running = false;
  let applied = 0;
  let pending = 0;
  let lastWrite = 0;
  let lastPrune = 0;
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
  let wake: (() => void) | undefined;
  /** Takes the durable's messages into the queue (and waits while it is full). */
  let pump: OwnedDurablePump | undefined;
  let loopDone: Promise<void> = Promise.resolve();

  const take = (batch: JsMsg[]) => {
    const arrived = now();
    for (const msg of batch) {
      delivered.push(msg);
      pending = msg.info.pending;
      let event: ReturnType<typeof decodeEvent>;
      try {
        event = decodeEvent(msg.data);
      } catch (err) {
        if (!(err instanceof PoisonMessageError)) throw err;
        logger.error({ seq: msg.seq, reason: err.message }, "poison event skipped by the index");
        continue;
      }
      const key = indexKey(event.client_id, event.job_id);
      let job = held.get(key);
      if (job === undefined) {
        const fresh =
          event.type === "run.requested" && !msg.info.redelivered && msg.seq > noRowAbove;
        const cached = fresh ? null : unsettled.get(key);
        job = {
          key,
          clientId: event.client_id,
          jobId: event.job_id,
          events: [],
          since: arrived,
          heal: false,
          stored: cached,
          state: cached ?? null,
          tenant: undefined,
          folded: 0,
        };
        held.set(key, job);
      }
      job.events.push({ msg, event });
      if (msg.info.redelivered) job.heal = true;
    }
  };

  /** Reads the stored rows of jobs first seen this round, and heals redelivered ones. */
  const prepare = async (jobs: HeldJob[]) => {
    const unknown = jobs.filter((j) => j.stored === undefined || j.heal);
    if (unknown.length > 0) {
      const rows = await store.load(unknown.map((j) => ({ clientId: j.clientId, jobId: j.jobId })));
      for (const j of unknown) {
        j.stored = rows.get(j.key) ?? null;
        j.state = j.stored;
      }
    }
    for (const j of jobs) {
      if (!j.heal) {
        foldNew(j);
        continue;
      }
      // A redelivery comes after newer events of the job: fold its whole history instead.
      const history = await readJobHistory(deps.jsm, { client_id: j.clientId, job_id: j.jobId });
      j.state = foldHistory(history);
      j.tenant = history.map((h) => tenantOf(h.event)).find((t) => t !== undefined);
      j.folded = j.events.length;
    }
  };

  /** The highest sequence every event at or below which is written, once `due` is. */
  const positionAfter = (due: ReadonlySet<string>): number => {
    let lowestHeld = Number.POSITIVE_INFINITY;
    for (const job of held.values()) {
      if (due.has(job.key)) continue;
      for (const { msg } of job.events) lowestHeld = Math.min(lowestHeld, msg.seq);
    }
    const newest = delivered.length > 0 ? (delivered[delivered.length - 1] as JsMsg).seq : applied;
    return Math.max(applied, Math.min(newest, lowestHeld - 1));
  };

  /** Acks the newest delivered message at or below the position (AckPolicy.All settles the rest). */
  const ackUpTo = (position: number) => {
    let last: JsMsg | undefined;
    let keep = 0;
    for (; keep < delivered.length && (delivered[keep] as JsMsg).seq <= position; keep++) {
      last = delivered[keep];
    }
    delivered = delivered.slice(keep);
    last?.ack();
  };

  const round = async () => {
    const batch = queue.slice(0, maxBatch);
    queue = queue.slice(batch.length);
    pump?.roomMade();
    take(batch);
    const jobs = [...held.values()];
    await prepare(jobs);
    const at = now();
    const due = jobs.filter(
      (j) =>
        !running ||
        j.heal ||
        (j.state !== null && isSettledView(j.state)) ||
        at - j.since >= lingerMs,
    );
    const rows: IndexRow[] = [];
    const counts = new Map<string, CountDelta>();
    for (const job of due) {
      const row = rowOf(job);
      if (row === undefined) continue;
      rows.push(row);
      countChanges(job.stored ?? null, row.view, counts);
    }
    const position = positionAfter(new Set(due.map((j) => j.key)));
    // Nothing new (events the index had already): no transaction, but the jobs are done with.
    if (rows.length > 0 || position !== applied) {
      await store.apply({
        rows,
        counts: [...counts.values()].filter((c) => c.delta !== 0),
        position: { appliedSeq: position, pending, updatedMs: at, stream },
        owner,
      });
      lastWrite = at;
      for (const row of rows) written = Math.max(written, row.view.seq);
    }
    for (const job of due) {
      held.delete(job.key);
      if (job.state === null || isSettledView(job.state)) unsettled.delete(job.key);
      else unsettled.set(job.key, job.state);
    }
    applied = position;
    ackUpTo(position);
  };

  /** Keeps what it holds from being redelivered while the store refuses writes. */
  const keepAlive = () => {
    for (const msg of delivered) msg.working();
  };

  const housekeeping = async () => {
    const at = now();
    if (at - lastWrite >= HEARTBEAT_MS) {
      lastWrite = at;
      await store.heartbeat(pending, at);
    }
    if (deps.retentionMs !== undefined && at - lastPrune >= PRUNE_MS) {
      lastPrune = at;
      const removed = await store.prune(at - deps.retentionMs);
      if (removed > 0) logger.info({ removed }, "index pruned to the stream's retention");
      await store.optimize();
    }
  };

  const idle = async () => {
    // A message that arrived while housekeeping awaited the store found no waiter to wake: do
    // not sleep on it (it waited up to HEARTBEAT_MS to be indexed).
    if (queue.length > 0) return;
    let oldest = Number.POSITIVE_INFINITY;
    for (const job of held.values()) oldest = Math.min(oldest, job.since);
    const waitMs = held.size === 0 ? HEARTBEAT_MS : Math.max(0, oldest + lingerMs - now());
    await new Promise<void>((resolve) => {
      wake = resolve;
      setTimeout(resolve, waitMs);
    });
    wake = undefined;
  };

  const loop = async () => {
    let backoffMs = 0;
    let lastRound = 0;
    while (running || queue.length > 0 || held.size > 0) {
      try {
        const gather = lastRound + ROUND_MS - now();
        if (running && queue.length > 0 && queue.length < maxBatch && gather > 0) {
          await Bun.sleep(gather);
          continue;
        }
        if (queue.length === 0 && running) {
          await housekeeping();
          const at = now();
          const anyDue = [...held.values()].some((j) => at - j.since >= lingerMs);
          if (!anyDue) {
            await idle();
            continue;
          }
        }
        await round();
        lastRound = now();
        backoffMs = 0;
      } catch (err) {
        if (err instanceof IndexFencedError) {
          // Another indexer runs now (run one): this one stops, leaving its work to it.
          logger.error({ err: err.message }, "indexer stopped: another indexer owns the index");
          running = false;
          queue = [];
          held.clear();
          break;
        }
        backoffMs = Math.min(Math.max(backoffMs * 2, 100), 5_000);
        logger.error({ err: (err as Error).message, retry_ms: backoffMs }, "index write failed");
        keepAlive();
        for (const job of held.values()) {
          // Read the row again after a failure, and fold every held event onto it.
          job.stored = undefined;
          job.folded = 0;
        }
        if (!running && backoffMs >= 5_000) break;
        await Bun.sleep(backoffMs);
      }
    }
  };

  /** Takes the durable from the index's own position and starts folding. */
  const consumeFromPosition = async () => {
    noRowAbove = written;
    await recreateIndexConsumer(deps.jsm, applied + 1);
    const consumer = await deps.js.consumers.get(TOPOLOGY.eventsStream, INDEX_CONSUMER);
    const stream = await consumer.consume({ max_messages: 500 });
    messages = stream;
    running = true;
    loopDone = loop();
    const started = pumpOwnedDurable({
      messages: stream,
      running: () => running,
      push: (msg) => {
        queue.push(msg);
        wake?.();
      },
      full: () => queue.length >= maxBatch * 4,
      onGap: (gap) => {
        // A paused indexer woke past its lease and pulled from this durable: what it took
        // would be skipped by this one's position. Its writes are fenced by the claim.
        logger.warn(
          gap,
          "another process took deliveries of the index's durable; taking it again from the index's position",
        );
        retaking = retaking.then(retake).catch((err: unknown) => {
          logger.error({ err: (err as Error).message }, "indexer retake failed");
        });
      },
    });
    pump = started;
    started.done.catch((err: unknown) => {
      // The connection closed under it: nothing more comes; what was not committed comes again
      // to the next indexer, from the index's position.
      logger.error({ err: (err as Error).message }, "index consumer ended");
      running = false;
      wake?.();
    });
  };

  /** Drops what it holds (it comes again) and consumes again from the index's position. */
  const retake = async () => {
    running = false;
    pump?.roomMade();
    await messages?.close();
    wake?.();
    await loopDone;
    queue = [];
    held.clear();
    delivered = [];
    await retryWhile({
      step: consumeFromPosition,
      keepTrying: () => !stopped,
      onError: (err, retryMs) =>
        logger.error(
          { err: err.message, retry_ms: retryMs },
          "indexer could not take its durable again; retrying",
        ),
    });
  };
  let retaking: Promise<void> = Promise.resolve();
  let stopped = false;

  return {
    async start() {
      // A new lease: what this process held or cached under an earlier one may be stale (another
      // indexer wrote since), so it starts from the store alone.
      stopped = false;
      queue = [];
      held.clear();
      delivered = [];
      unsettled = new GenerationalMap<JobView>(20_000);
      owner = await store.claim();
      stream = (await deps.jsm.streams.info(TOPOLOGY.eventsStream)).created;
      const stored = await store.position();
      applied = stored.appliedSeq;
      written = stored.writtenSeq;
      if (stored.stream !== "" && stored.stream !== stream) {
        // Sequences of another stream (a new NATS store, another hub): start over from this one.
        logger.warn(
          { indexed: stored.stream, stream },
          "the index is of another events stream; rebuilding it",
        );
        await store.reset();
        applied = 0;
        written = 0;
      }
      await consumeFromPosition();
      logger.info({ backend: store.backend, from_seq: applied + 1 }, "indexer started");
    },
    async stop() {
      stopped = true;
      await retaking;
      running = false;
      pump?.roomMade();
      await messages?.close();
      wake?.();
      await loopDone;
    },
    appliedSeq: () => applied,
  };
}
