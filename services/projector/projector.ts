import type {
  ConsumerMessages,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import {
  decodeEvent,
  type OwnedDurablePump,
  PoisonMessageError,
  pumpOwnedDurable,
  recreateDurableFromFloor,
  TOPOLOGY,
} from "../../shared/bus/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";
import { isSettledView, jobViewKey, subjectFilters } from "../../shared/jobs/index.ts";
import { type Lease, retryWhile } from "../../shared/lease/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { NO_TRACING, type Tracing } from "../../shared/telemetry/index.ts";
import { AckFloor } from "./ack-floor.ts";
import { foldHeld, type Held, writeHeld } from "./held.ts";
import { type ProjectorMetrics, tracedWrite } from "./observe.ts";
import { createViewStore, type ViewStoreDeps } from "./view-store.ts";

/** How long a holder whose lease is not held waits before it looks again. */
const FENCED_PAUSE_MS = 50;
/**
 * Least time from one round's start to the next while the queue is not full. Below a few
 * thousand events a second each event arrived alone and made its own round: its own KV write
 * flush and its own ack (a socket write each, the projector's largest cost at 500 jobs/s). An
 * event after a quiet spell still starts a round at once; under a steady trickle a view waits at
 * most this long.
 */
const ROUND_GAP_MS = 10;

export interface ProjectorDeps {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly kv: KV;
  readonly logger: Logger;
  /** Largest group of messages folded in one round. */
  readonly maxBatch?: number;
  /**
   * How long a job's view may wait for the job's next event before it is written anyway. A job
   * that settles within it (final, callback delivered) costs one KV write in all.
   */
  readonly lingerMs?: number;
  /** Durable name; a rebuild uses a temporary one. */
  readonly durable?: string;
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
 * Folds every job event into the KV job view with the same `transition` as audit verify.
 *
 * One KV write per job on the common path: a job's events arrive within milliseconds of each
 * other (run.requested, job.done, callback.delivered), so a view that is not settled yet is held
 * for up to `lingerMs` waiting for the rest, and written once when it settles (or when the linger
 * runs out). Its messages stay un-acked until then, so nothing is acknowledged that is not in KV.
 * Acks are AckPolicy.All: one per round, for the highest written message below the lowest one
 * still held (AckFloor). Writes are compare-and-set on the KV revision, and the view's `seq`
 * makes re-application after redelivery a no-op. Run one projector replica: JetStream spreads a
 * durable's messages over replicas, which would break per-job ordering.
 */
export function createProjector(deps: ProjectorDeps): Projector {
  const { logger } = deps;
  const durable = deps.durable ?? TOPOLOGY.consumers.projector;
  // 250: a round still holds tens of ms of events at full load, with a low peak RSS.
  const maxBatch = deps.maxBatch ?? 250;
  const lingerMs = deps.lingerMs ?? 100;
  const store = createViewStore({
    kv: deps.kv,
    jsm: deps.jsm,
    ...(deps.settledViewChanged ? { settledViewChanged: deps.settledViewChanged } : {}),
  });
  const heldDeps = { store, logger, ...(deps.metrics ? { metrics: deps.metrics } : {}) };
  const tracing = deps.tracing ?? NO_TRACING;
  let floor = new AckFloor();
  const held = new Map<string, Held>();
  let messages: ConsumerMessages | undefined;
  let queue: JsMsg[] = [];
  let wake: (() => void) | undefined;
  /** Takes the durable's messages into the queue (and waits while it is full). */
  let pump: OwnedDurablePump | undefined;
  const maxQueued = maxBatch * 4;
  let running = false;
  let applied = 0;
  let loopDone: Promise<void> = Promise.resolve();
  let retryDelayMs = 0;

  /** The lease is held, or there is none (a rebuild, a single-process hub). */
  const leading = () => deps.lease === undefined || deps.lease.holding();

  const settle = (msg: JsMsg) => {
    floor.settled(msg);
    applied = Math.max(applied, msg.seq);
  };

  /**
   * Adds a round's messages to the held jobs (starting a job's entry on its first message) and
   * returns the jobs it touched.
   */
  const take = (batch: JsMsg[]): Set<Held> => {
    const now = Date.now();
    const touched = new Set<Held>();
    for (const msg of batch) {
      floor.delivered(msg);
      let event: JobEvent;
      try {
        event = decodeEvent(msg.data);
      } catch (err) {
        if (!(err instanceof PoisonMessageError)) throw err;
        logger.error(
          { seq: msg.seq, subject: msg.subject, reason: err.message },
          "poison event terminated",
        );
        msg.term(err.message);
        floor.settled(msg);
        continue;
      }
      const key = jobViewKey(event);
      let entry = held.get(key);
      if (entry === undefined) {
        entry = {
          key,
          ref: event,
          events: [],
          since: now,
          heal: false,
          folded: undefined,
        };
        held.set(key, entry);
      }
      entry.events.push({ msg, event });
      if (msg.redelivered) entry.heal = true;
      touched.add(entry);
    }
    return touched;
  };

  /** The held job whose linger runs out first (held keeps insertion order, and so `since`'s). */
  const oldest = (): Held | undefined => held.values().next().value;

  /**
   * Jobs whose view is written this round: touched ones that settled (or must heal), those whose
   * linger ran out (a prefix of `held`, oldest first), or all of them when stopping. Neither
   * step walks every held job.
   */
  const due = (now: number, touched: Set<Held>): Held[] => {
    if (!running) return [...held.values()];
    const list = new Set<Held>();
    for (const entry of touched) {
      const state = entry.folded?.state;
      if (entry.heal || (state != null && isSettledView(state))) list.add(entry);
    }
    for (const entry of held.values()) {
      if (now - entry.since < lingerMs) break;
      list.add(entry);
    }
    return [...list];
  };

  const round = async () => {
    const batch = queue.slice(0, maxBatch);
    queue = queue.slice(batch.length);
    pump?.roomMade();
    const touched = take(batch);
    // Fold every touched job (loading its view once); then write the due ones. A view that cannot
    // be read now (a request timed out, NATS away) stays held unfolded: its write below reads it
    // again, under the write's own retry. Unhandled, the rejection ended the whole process (Bun
    // exits on one): a leader paused past a request's timeout died on waking.
    await Promise.all(
      [...touched].map((entry) =>
        foldHeld(entry, heldDeps).catch((err: unknown) => {
          entry.folded = undefined;
          logger.warn(
            { key: entry.key, err: (err as Error).message },
            "view read failed; retrying",
          );
        }),
      ),
    );
    // Fenced: while the lease is not held, nothing is written or acknowledged and the work stays
    // held. A lease really lost stands this process down (halt drops it all, the new holder
    // refolds from the ack floor); a renewal that was only late (seen on R3 under load) lets the
    // next round go on. Stopping the loop here instead left a holder that never folded again.
    if (!leading()) {
      await Bun.sleep(FENCED_PAUSE_MS);
      return;
    }
    const writes = due(Date.now(), touched);
    const results = await Promise.all(
      writes.map((entry) =>
        tracedWrite(tracing, entry, () => writeHeld(entry, heldDeps)).then(
          (ok) => ({ entry, ok }),
          (err: unknown) => {
            store.forget(entry.key);
            logger.error(
              { key: entry.key, err: (err as Error).message },
              "projection failed; retrying",
            );
            return { entry, ok: false };
          },
        ),
      ),
    );
    let failed = false;
    for (const { entry, ok } of results) {
      if (!ok) {
        failed = true;
        for (const { msg } of entry.events) msg.working();
        continue;
      }
      for (const { msg } of entry.events) settle(msg);
      held.delete(entry.key);
    }
    // Fenced again before acking: a holder paused during its writes wakes past its lease, and its
    // ack-all would reach the new holder's durable of the same name. Kept for the next flush.
    if (leading()) floor.flush();
    // A job whose write failed is retried before anything newer of it is written (it stays held,
    // so newer events join its group in order); back off while writes keep failing.
    retryDelayMs = failed ? Math.min(Math.max(retryDelayMs * 2, 50), 2_000) : 0;
    if (failed) await Bun.sleep(retryDelayMs);
  };

  /** Waits for new messages, or for the oldest held job's linger to run out. */
  const idle = async () => {
    const first = oldest();
    const waitMs =
      first === undefined ? undefined : Math.max(0, first.since + lingerMs - Date.now());
    await new Promise<void>((resolve) => {
      wake = resolve;
      if (waitMs !== undefined) setTimeout(resolve, waitMs);
    });
    wake = undefined;
  };

  let roundFailures = 0;
  /** stop() was called: nothing is taken again after it. */
  let stopped = false;
  let roundStartedAt = Number.NEGATIVE_INFINITY;
  const loop = async () => {
    while (running || queue.length > 0 || held.size > 0) {
      const first = oldest();
      const nothingDue = first === undefined || Date.now() - first.since < lingerMs;
      if (queue.length === 0 && running && nothingDue) {
        await idle();
        continue;
      }
      const sinceLastRound = Date.now() - roundStartedAt;
      if (running && queue.length < maxBatch && sinceLastRound < ROUND_GAP_MS) {
        await Bun.sleep(ROUND_GAP_MS - sinceLastRound);
      }
      roundStartedAt = Date.now();
      try {
        await round();
        roundFailures = 0;
      } catch (err) {
        // Whatever a round throws, the loop goes on (held work stays held, nothing is acked);
        // a loop that ended left the process holding the lease and folding nothing.
        roundFailures++;
        logger.error({ durable, err: (err as Error).message }, "projector round failed; retrying");
        await Bun.sleep(Math.min(50 * 2 ** roundFailures, 2_000));
      }
    }
  };

  /** Takes the durable from its ack floor and starts folding. */
  const consumeFromFloor = async () => {
    // Start from the acknowledged floor: what a killed projector held arrives first, in order,
    // and its views are completed by the ordinary fold (the view's seq skips what was applied).
    const { fromSeq } = await recreateDurableFromFloor(deps.jsm, {
      name: durable,
      filterSubject: subjectFilters.all,
      // A job whose write keeps failing calls working() while it retries.
      ackWaitMs: 10_000,
      maxAckPending: 20_000,
      ackPolicy: "all",
    });
    // A fresh floor for the recreated durable: one kept from an earlier lease would still count
    // the messages dropped when it stood down as unwritten, and never ack again.
    floor = new AckFloor();
    const consumer = await deps.js.consumers.get(TOPOLOGY.eventsStream, durable);
    const stream = await consumer.consume({ max_messages: 500 });
    messages = stream;
    running = true;
    loopDone = loop();
    const started = pumpOwnedDurable({
      messages: stream,
      running: () => running,
      // A holder whose lease lapsed (paused past it, or a renewal running late) takes nothing
      // more until the lease is renewed or the holder stands down.
      beforeEach: async () => {
        while (!leading() && running) await Bun.sleep(FENCED_PAUSE_MS);
      },
      push: (msg) => {
        queue.push(msg);
        wake?.();
      },
      full: () => queue.length >= maxQueued,
      onGap: (gap) => {
        logger.warn(
          { durable, ...gap },
          "another process took deliveries of the projector's durable; taking it again from its ack floor",
        );
        retakeInTurn();
      },
    });
    pump = started;
    started.done.catch((err: unknown) => {
      // The iterator threw (its connection closed under it): nothing more would come while this
      // process keeps the lease, so it takes the durable again unless it is stopping.
      logger.error({ durable, err: (err as Error).message }, "projector consumer ended");
      if (running && !stopped) retakeInTurn();
    });
    logger.info({ durable, linger_ms: lingerMs, from_seq: fromSeq }, "projector started");
  };

  /**
   * Stops folding. `flush`: write every held view first (a graceful stop). Without it (the lease
   * was lost) nothing more is written: the new holder refolds from the ack floor.
   */
  const halt = async (flush: boolean) => {
    if (!flush) {
      queue = [];
      held.clear();
    }
    running = false;
    pump?.roomMade();
    await messages?.close();
    wake?.();
    await loopDone;
    messages = undefined;
  };

  /**
   * Folds again from the durable's ack floor: messages another process took are un-acked there
   * (a holder that lost its lease never acks), and recreating the durable ends that process's
   * pulls. Views skip what they already applied.
   */
  const retake = async () => {
    await halt(false);
    await retryWhile({
      step: consumeFromFloor,
      keepTrying: () => !stopped && leading(),
      onError: (err, retryMs) =>
        logger.error(
          { durable, err: err.message, retry_ms: retryMs },
          "projector could not take its durable again; retrying",
        ),
    });
  };

  const retakeInTurn = () => {
    serially(retake).catch((err: unknown) => {
      logger.error({ durable, err: (err as Error).message }, "projector retake failed");
    });
  };

  /**
   * Lease steps and retakes run one at a time. Each step's own promise rejects with its error
   * (a failed lead releases the lease); the chain goes on regardless.
   */
  let transition: Promise<void> = Promise.resolve();
  const serially = (step: () => Promise<void>): Promise<void> => {
    const run = transition.then(step);
    transition = run.catch(() => undefined);
    return run;
  };

  return {
    async start() {
      if (deps.lease === undefined) return consumeFromFloor();
      await deps.lease.start({
        lead: () => serially(consumeFromFloor),
        standDown: () => serially(() => halt(false)),
      });
      if (!deps.lease.holding()) logger.info({ durable }, "projector standing by");
    },
    async stop() {
      stopped = true;
      await halt(true);
      await deps.lease?.stop();
    },
    appliedSeq: () => applied,
  };
}
