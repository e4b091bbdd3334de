import type {
  ConsumerMessages,
  JetStreamClient,
  JetStreamManager,
  JsMsg,
} from "@nats-io/jetstream";
import {
  type DurableOptions,
  type OwnedDurablePump,
  pumpOwnedDurable,
  recreateDurableAt,
  recreateDurableFromFloor,
} from "../bus/index.ts";
import type { EventLayout } from "../jobs/index.ts";
import { retryWhile } from "../lease/index.ts";
import type { Logger } from "../log/index.ts";
import { type RoundPacer, sharedRoundGapMs } from "./pacer.ts";
import {
  type Fence,
  type Pace,
  ProjectionFencedError,
  type ProjectionSlot,
  type ReadModel,
} from "./read-model.ts";
import { createRounds, FENCED_PAUSE_MS } from "./rounds.ts";

/**
 * How long a fenced runner waits before it leads again (if it still holds the lease): longer than
 * a claim's loser takes to see the claim and stand down (its next renewal, 1 s).
 */
const FENCED_LEAD_AGAIN_MS = 2_000;

export interface ProjectionRunnerDeps<State> {
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  readonly logger: Logger;
  readonly slot: ProjectionSlot;
  readonly model: ReadModel<State>;
  readonly pace: Pace;
  /**
   * Shared by the runners of one read model in one process (one per partition): their round gap
   * grows with the runners folding (pacer.ts). Without it each runner paces alone.
   */
  readonly pacer?: RoundPacer;
}

export interface ProjectionRunner {
  /** Competes for the slot's lease (or leads at once without one). */
  start(): Promise<void>;
  /** Stops taking events, writes every job it holds, acks, and releases the lease. */
  stop(): Promise<void>;
  /** The highest stream sequence whose effect is written. */
  appliedSeq(): number;
}

/**
 * Runs one read model on one slot (docs/architecture.md, "Projection runner"). At each lead it
 * opens the model and takes the durable again (from the model's own position, or from the
 * durable's ack floor: what an earlier holder held un-acked comes first, in order). Deliveries
 * gather into rounds (one write and one ack per round); a job's events are held until it settles
 * or its linger runs out; acks (AckPolicy.All) stay below every job still held. While the lease
 * is not held nothing is written or acknowledged; a lease lost drops what is held (the next
 * holder folds it again). Another process pulling from the durable, or the consumer ending under
 * a holder, makes it take the durable again.
 */
export function createProjectionRunner<State>(deps: ProjectionRunnerDeps<State>): ProjectionRunner {
  const { logger, model, pace, slot } = deps;
  const { durable } = slot;
  const leading = () => slot.lease === undefined || slot.lease.holding();
  const fence: Fence = { partition: slot.partition, holding: leading };
  const rounds = createRounds({
    jsm: deps.jsm,
    layout: deps.layout,
    logger,
    model,
    pace,
    durable,
    fence,
  });
  const log = { durable, partition: slot.partition };
  let messages: ConsumerMessages | undefined;
  let queue: JsMsg[] = [];
  let wake: (() => void) | undefined;
  let pump: OwnedDurablePump | undefined;
  let running = false;
  /** stop() was called: nothing is taken again after it. */
  let stopped = false;
  let loopDone: Promise<void> = Promise.resolve();
  /** Counts this runner among the pacer's while it folds. */
  let leavePacer: (() => void) | undefined;

  /**
   * Waits for new messages or for the oldest held job's linger. Holding nothing it sets no timer:
   * an idle partition costs no wake-up of its own (housekeeping is one process-wide timer,
   * housekeeping.ts).
   */
  const idle = async () => {
    if (queue.length > 0) return;
    const since = rounds.oldestSince();
    await new Promise<void>((resolve) => {
      wake = resolve;
      if (since !== undefined) setTimeout(resolve, Math.max(0, since + pace.lingerMs - Date.now()));
    });
    wake = undefined;
  };

  const lingerRanOut = () => {
    const since = rounds.oldestSince();
    return since !== undefined && Date.now() - since >= pace.lingerMs;
  };

  /** One step of the loop: waiting while idle, else a round. */
  const step = async (roundStartedAt: number): Promise<{ round: boolean; giveUp: boolean }> => {
    if (queue.length === 0 && running) {
      if (!lingerRanOut()) {
        await idle();
        return { round: false, giveUp: false };
      }
    }
    const sinceLastRound = Date.now() - roundStartedAt;
    const gapMs = sharedRoundGapMs(deps.pacer, { baseMs: pace.roundGapMs, capMs: pace.lingerMs });
    if (running && queue.length < pace.maxBatch && sinceLastRound < gapMs) {
      await Bun.sleep(gapMs - sinceLastRound);
    }
    const batch = queue.slice(0, pace.maxBatch);
    queue = queue.slice(batch.length);
    pump?.roomMade();
    const exhausted = await rounds.round(batch, !running);
    return { round: true, giveUp: exhausted && !running };
  };

  const loop = async () => {
    let failures = 0;
    let roundStartedAt = Number.NEGATIVE_INFINITY;
    while (running || queue.length > 0 || rounds.heldCount() > 0) {
      try {
        const startedAt = Date.now();
        const { round, giveUp } = await step(roundStartedAt);
        if (round) roundStartedAt = startedAt;
        // Stopping while writes keep failing: what is unwritten is un-acked and comes again.
        if (giveUp) break;
        failures = 0;
      } catch (err) {
        if (err instanceof ProjectionFencedError) {
          logger.warn(
            { ...log, err: err.message, retry_ms: FENCED_LEAD_AGAIN_MS },
            `${model.name} fenced; leads again if it still holds the lease`,
          );
          running = false;
          queue = [];
          rounds.drop();
          leadAgainInTurn();
          break;
        }
        // Whatever a round throws, the loop goes on (held work stays held, nothing is acked);
        // a loop that ended left the process holding the lease and folding nothing.
        failures++;
        logger.error(
          { ...log, err: (err as Error).message },
          `${model.name} round failed; retrying`,
        );
        if (!running && failures >= 6) break;
        await Bun.sleep(Math.min(50 * 2 ** failures, 2_000));
      }
    }
  };

  /** Takes the durable again from the model's position (or its ack floor) and starts folding. */
  const consume = async () => {
    const options: DurableOptions = {
      name: durable,
      stream: slot.stream,
      filterSubject: slot.filterSubject,
      ackWaitMs: pace.ackWaitMs,
      maxAckPending: 20_000,
      ackPolicy: "all",
    };
    const resume = model.resumeFrom();
    const fromSeq =
      resume === undefined
        ? (await recreateDurableFromFloor(deps.jsm, options)).fromSeq
        : await recreateDurableAt(deps.jsm, { ...options, fromSeq: resume }).then(() => resume);
    rounds.restart();
    const consumer = await deps.js.consumers.get(slot.stream, durable);
    const stream = await consumer.consume({ max_messages: 500 });
    messages = stream;
    running = true;
    leavePacer?.();
    leavePacer = deps.pacer?.join();
    loopDone = loop();
    pump = pumpOwnedDurable({
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
      full: () => queue.length >= pace.maxBatch * 4,
      onGap: (gap) => {
        logger.warn(
          { ...log, ...gap },
          `another process took deliveries of the ${durable}'s durable; taking it again from its position`,
        );
        retakeInTurn();
      },
    });
    watchConsumer(stream);
    pump.done.catch((err: unknown) => {
      // The iterator threw (its connection closed under it): nothing more would come while this
      // process keeps the lease, so it takes the durable again unless it is stopping.
      logger.error({ ...log, err: (err as Error).message }, `${model.name} consumer ended`);
      if (running && !stopped) retakeInTurn();
    });
    logger.info({ ...log, linger_ms: pace.lingerMs, from_seq: fromSeq }, `${model.name} started`);
  };

  /**
   * Takes the durable again (if it still leads) when nats.js's consume would wait long for it:
   * - the durable was deleted under it (another process leads too: a claim both won, or it is
   *   stale); nats.js would find the new consumer only after missed heartbeats;
   * - two heartbeats were missed (the consumer's leader was lost with its node: nats-server
   *   answers the pull waiting there with a "Leadership Change" notice, which consume() leaves to
   *   the heartbeats). nats.js would then ask for the consumer's info and, if that fails during
   *   the election, wait a whole pull expiry (30 s) before asking again: a partition's fold
   *   stopped for over a minute in the cluster test. A retake tries again within seconds.
   */
  const watchConsumer = (stream: ConsumerMessages) => {
    void (async () => {
      for await (const status of stream.status()) {
        const deleted = status.type === "consumer_deleted";
        const silent = status.type === "heartbeats_missed" && status.count >= 2;
        if (!deleted && !silent) continue;
        if (messages === stream && running && !stopped) {
          logger.warn(
            log,
            deleted
              ? `the ${durable}'s durable was deleted under it; taking it again`
              : `no heartbeat from the ${durable}'s durable; taking it again`,
          );
          retakeInTurn();
        }
        return;
      }
    })().catch(() => undefined);
  };

  /**
   * Stops folding. `flush`: write every held job first (a graceful stop). Without it (the lease
   * was lost) nothing more is written: the next holder folds it again from its position.
   */
  const halt = async (flush: boolean) => {
    if (!flush) {
      queue = [];
      rounds.drop();
    }
    running = false;
    leavePacer?.();
    leavePacer = undefined;
    pump?.roomMade();
    await messages?.close();
    wake?.();
    await loopDone;
    messages = undefined;
  };

  /** Drops what it holds and takes the durable again (views and rows skip what they have). */
  const retake = async () => {
    await halt(false);
    await retryWhile({
      step: consume,
      keepTrying: () => !stopped && leading(),
      onError: (err, retryMs) =>
        logger.error(
          { ...log, err: err.message, retry_ms: retryMs },
          `${model.name} could not take its durable again; retrying`,
        ),
    });
  };

  const retakeInTurn = () => {
    serially(retake).catch((err: unknown) => {
      logger.error({ ...log, err: (err as Error).message }, `${model.name} retake failed`);
    });
  };

  /**
   * Lease steps and retakes run one at a time. Each step's own promise rejects with its error
   * (a failed lead releases the lease); the chain goes on regardless.
   */
  let transition: Promise<void> = Promise.resolve();
  const serially = (next: () => Promise<void>): Promise<void> => {
    const run = transition.then(next);
    transition = run.catch(() => undefined);
    return run;
  };

  const lead = async () => {
    await model.open(fence);
    await consume();
  };

  /**
   * After a fence: another writer took the model's store. When this process was the stale one it
   * has lost the lease by now and does nothing. When it still holds the lease, the other was the
   * stale one (two members both won a claim's compare-and-set: nats-server before 2.9.21 checks
   * the expected sequence before the raft proposal, nats-server#4320; the loser stands down once it
   * sees the claim), so it opens the model again, taking the store back.
   */
  const leadAgain = async () => {
    await halt(false);
    await Bun.sleep(FENCED_LEAD_AGAIN_MS);
    await retryWhile({
      step: lead,
      keepTrying: () => !stopped && leading(),
      onError: (err, retryMs) =>
        logger.error(
          { ...log, err: err.message, retry_ms: retryMs },
          `${model.name} could not lead again; retrying`,
        ),
    });
  };

  const leadAgainInTurn = () => {
    serially(leadAgain).catch((err: unknown) => {
      logger.error({ ...log, err: (err as Error).message }, `${model.name} lead again failed`);
    });
  };

  return {
    async start() {
      stopped = false;
      if (slot.lease === undefined) return serially(lead);
      await slot.lease.start({
        lead: () => serially(lead),
        standDown: () => serially(() => halt(false)),
      });
      if (!slot.lease.holding()) logger.info(log, `${model.name} standing by`);
    },
    async stop() {
      stopped = true;
      await halt(true);
      await slot.lease?.stop();
    },
    appliedSeq: rounds.appliedSeq,
  };
}
