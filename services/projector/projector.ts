import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import type { EventLayout } from "../../shared/jobs/index.ts";
import type { Lease } from "../../shared/lease/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import {
  type BacklogCollector,
  createProjectionRunner,
  type RoundPacer,
  type SharedFeeds,
} from "../../shared/projection/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import type { ProjectorMetrics } from "./observe.ts";
import { createViewModel } from "./view-model.ts";
import { createViewStore, type ViewStoreDeps } from "./view-store.ts";

/**
 * Least time from one round's start to the next while the queue is not full. Below a few
 * thousand events a second each event arrived alone and made its own round: its own KV write
 * flush and its own ack (a socket write each, the projector's largest cost at 500 jobs/s). An
 * event after a quiet spell still starts a round at once; under a steady trickle a view waits at
 * most this long.
 */
const ROUND_GAP_MS = 10;

export interface ProjectorDeps {
  /** Its reconnects start the durable's pull again. */
  readonly nc: Pick<NatsConnection, "status">;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  /** The partition this projector folds (default 0). */
  readonly partition?: number;
  /** That partition's view bucket. */
  readonly kv: KV;
  readonly logger: Logger;
  /** Largest group of messages folded in one round. */
  readonly maxBatch?: number;
  /**
   * How long a job's view may wait for the job's next event before it is written anyway. A job
   * that settles within it (final, callback delivered) costs one KV write in all.
   */
  readonly lingerMs?: number;
  /** How long a job's first view may wait for the job to settle (view-model.ts). */
  readonly settleWaitMs?: number;
  /** Durable name; a rebuild uses a temporary one. */
  readonly durable?: string;
  /** Shared by the projectors of one process, one per partition: their round gap grows with them. */
  readonly pacer?: RoundPacer;
  /** Shared by every read model of the process: it collects while one folds a backlog. */
  readonly backlog?: BacklogCollector;
  /**
   * The process runs the indexer too: while this projector leads, its partition's indexer may
   * fold its deliveries instead of its own durable's (shared/projection/shared-feed.ts).
   */
  readonly feeds?: SharedFeeds;
  /**
   * Active/standby: only the holder of this lease folds (several replicas may run). Without one,
   * this process folds unconditionally (a rebuild, a single-process hub).
   */
  readonly lease?: Lease;
  /** Jobs completed and their latency, counted as their views are written. */
  readonly metrics?: ProjectorMetrics;
  /** A `project` span per view write (docs/operations.md, "Traces"). */
  readonly tracing?: Tracing;
  /** Called after a write over a settled view (view-store.ts): readers must drop their copy. */
  readonly settledViewChanged?: ViewStoreDeps["settledViewChanged"];
}

export interface Projector {
  start(): Promise<void>;
  /** Stops pulling, writes every view it holds, acks. */
  stop(): Promise<void>;
  /** Highest stream sequence whose effect is in KV. */
  appliedSeq(): number;
}

/**
 * Folds every job event into the KV job view: the view read model (view-model.ts) on the
 * projection runner (docs/architecture.md, "Projection runner").
 *
 * One KV write per job on the common path: a job's events arrive within milliseconds of each
 * other (run.requested, job.done, callback.delivered), so a view that is not settled yet is held
 * for up to `lingerMs` waiting for the rest, and written once when it settles (or when the linger
 * runs out). Its messages stay un-acked until then, so nothing is acknowledged that is not in KV.
 * The durable is taken from its ack floor at each lead. Run one active projector: JetStream
 * spreads a durable's messages over consumers, which would break per-job ordering.
 */
export function createProjector(deps: ProjectorDeps): Projector {
  const partition = deps.partition ?? 0;
  const store = createViewStore({
    kv: deps.kv,
    js: deps.js,
    bucket: deps.layout.viewBucket(partition),
    ...(deps.settledViewChanged ? { settledViewChanged: deps.settledViewChanged } : {}),
  });
  return createProjectionRunner({
    nc: deps.nc,
    js: deps.js,
    jsm: deps.jsm,
    layout: deps.layout,
    logger: deps.logger,
    slot: {
      partition,
      stream: deps.layout.stream(partition),
      durable: deps.durable ?? TOPOLOGY.consumers.projector,
      filterSubject: deps.layout.filters.all(partition),
      ...(deps.lease ? { lease: deps.lease } : {}),
    },
    model: createViewModel({
      store,
      logger: deps.logger,
      ...(deps.metrics ? { metrics: deps.metrics } : {}),
      ...(deps.tracing ? { tracing: deps.tracing } : {}),
    }),
    pace: {
      // 250: a round still holds tens of ms of events at full load, with a low peak RSS.
      maxBatch: deps.maxBatch ?? 250,
      lingerMs: deps.lingerMs ?? 100,
      settleWaitMs: deps.settleWaitMs ?? 400,
      roundGapMs: ROUND_GAP_MS,
      // A job whose write keeps failing calls working() while it retries.
      ackWaitMs: 10_000,
      backoffMs: { first: 50, max: 2_000 },
    },
    ...(deps.pacer ? { pacer: deps.pacer } : {}),
    ...(deps.backlog ? { backlog: deps.backlog } : {}),
    ...(deps.feeds ? { feeds: { registry: deps.feeds, role: "host" as const } } : {}),
  });
}
