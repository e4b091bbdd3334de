import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { type EventLayout, readCreatedMs } from "../../shared/jobs/index.ts";
import type { Lease } from "../../shared/lease/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import {
  type BacklogCollector,
  createProjectionRunner,
  type RoundPacer,
  type SharedFeeds,
} from "../../shared/projection/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import { INDEX_CONSUMER } from "./durable.ts";
import type { IndexHousekeeping } from "./housekeeping.ts";
import { createIndexModel } from "./index-model.ts";

export interface IndexerDeps {
  /** Its reconnects start the durable's pull again. */
  readonly nc: Pick<NatsConnection, "status">;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  /** The partition this indexer folds (default 0); each keeps its own position in the store. */
  readonly partition?: number;
  readonly store: IndexStore;
  readonly logger: Logger;
  /** How long a job's row waits for the job to settle before it is written anyway. */
  readonly lingerMs?: number;
  readonly maxBatch?: number;
  /**
   * The process's heartbeat and prune (one timer for all its partitions). Without it the index's
   * position moves only with writes (a rebuild, a test).
   */
  readonly housekeeping?: IndexHousekeeping;
  /**
   * Active/standby: only the holder of this lease indexes (several replicas may run). Without
   * one, this process indexes unconditionally (a rebuild, a test).
   */
  readonly lease?: Lease;
  readonly now?: () => number;
  /** Shared by the indexers of one process, one per partition: their round gap grows with them. */
  readonly pacer?: RoundPacer;
  /** Shared by every read model of the process: it collects while one folds a backlog. */
  readonly backlog?: BacklogCollector;
  /**
   * The process runs the projector too: once caught up, this indexer folds the deliveries of its
   * partition's projector durable instead of its own (shared/projection/shared-feed.ts).
   */
  readonly feeds?: SharedFeeds;
}

export interface Indexer {
  start(): Promise<void>;
  /** Stops taking events, writes what it holds. */
  stop(): Promise<void>;
  /** Every event at or below this sequence is in the index. */
  appliedSeq(): number;
}

/**
 * Least time between two transactions while the queue is not full: events gather into one
 * transaction instead of one (of a job or two) each. A round per arriving message cost a SQLite
 * commit per ~4 events (10,000 transactions for 20,000 jobs, 0.55 ms each).
 */
const ROUND_GAP_MS = 50;

/**
 * The search index's projection (docs/architecture.md, "The search index"): the index read model
 * (index-model.ts) on the projection runner, on the durable `index`, taken at each lead from the
 * index's own position. Like the projector, a job's row is held until it settles or for
 * `lingerMs` (one write per job on the common path), with one ack per round. Run one active
 * indexer.
 */
export function createIndexer(deps: IndexerDeps): Indexer {
  const partition = deps.partition ?? 0;
  const stream = deps.layout.stream(partition);
  const model = createIndexModel({
    jsm: deps.jsm,
    readCreatedMs: (job) => readCreatedMs(deps, { client_id: job.clientId, job_id: job.jobId }),
    partition,
    stream,
    store: deps.store,
    logger: deps.logger,
    ...(deps.now ? { now: deps.now } : {}),
  });
  const runner = createProjectionRunner({
    nc: deps.nc,
    js: deps.js,
    jsm: deps.jsm,
    layout: deps.layout,
    logger: deps.logger,
    slot: {
      partition,
      stream,
      durable: INDEX_CONSUMER,
      filterSubject: deps.layout.filters.all(partition),
      ...(deps.lease ? { lease: deps.lease } : {}),
    },
    model,
    pace: {
      maxBatch: deps.maxBatch ?? 500,
      lingerMs: deps.lingerMs ?? 100,
      roundGapMs: ROUND_GAP_MS,
      ackWaitMs: 30_000,
      backoffMs: { first: 100, max: 5_000 },
    },
    ...(deps.pacer ? { pacer: deps.pacer } : {}),
    ...(deps.backlog ? { backlog: deps.backlog } : {}),
    ...(deps.feeds ? { feeds: { registry: deps.feeds, role: "follower" as const } } : {}),
  });
  let untrack = () => {};
  return {
    async start() {
      untrack = deps.housekeeping?.track(model) ?? untrack;
      await runner.start();
    },
    async stop() {
      await runner.stop();
      untrack();
    },
    appliedSeq: model.appliedSeq,
  };
}
