import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { isJsError } from "../bus/index.ts";
import type { EventLayout } from "../jobs/index.ts";
import { retryWhile } from "../lease/index.ts";
import type { Logger } from "../log/index.ts";
import type { BacklogCollector } from "./backlog-collector.ts";
import { createLane } from "./lane.ts";
import { type OwnDurable, takeOwnDurable } from "./own-durable.ts";
import type { RoundPacer } from "./pacer.ts";
import type { Fence, Pace, ProjectionSlot, ReadModel } from "./read-model.ts";
import { FENCED_PAUSE_MS } from "./rounds.ts";
import type { FeedHost, Follower, SharedFeeds, UnfedReason } from "./shared-feed.ts";

/**
 * How long a fenced runner waits before it leads again (if it still holds the lease): longer than
 * a claim's loser takes to see the claim and stand down (its next renewal, 1 s).
 */
const FENCED_LEAD_AGAIN_MS = 2_000;

/** After a follower fell behind, how long it folds on its own durable before it asks again. */
const REJOIN_AFTER_FALLING_BEHIND_MS = 30_000;

export interface ProjectionRunnerDeps<State> {
  /** Its reconnects start the durable's pull again. */
  readonly nc: Pick<NatsConnection, "status">;
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
  /**
   * Shared by every runner of one process: a full collection now and then while a runner folds
   * a backlog (backlog-collector.ts). Without it the runner never collects (a test); rebuilds
   * bring their own.
   */
  readonly backlog?: BacklogCollector;
  /**
   * The read models of one process share each partition's deliveries (shared-feed.ts): the job
   * view's runner hosts, the index's follows. Without it the runner always folds its own durable.
   */
  readonly feeds?: { readonly registry: SharedFeeds; readonly role: "host" | "follower" };
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
 * gather into rounds (lane.ts: one write and one ack per round); a job's events are held until it
 * settles or its linger runs out; acks (AckPolicy.All) stay below every job still held. While the
 * lease is not held nothing is written or acknowledged; a lease lost drops what is held (the next
 * holder folds it again). Another process pulling from the durable, or the consumer ending under
 * a holder, makes it take the durable again. With `feeds`, a follower folds the host's deliveries
 * instead of its own durable's while it can keep up (shared-feed.ts).
 */
export function createProjectionRunner<State>(deps: ProjectionRunnerDeps<State>): ProjectionRunner {
  const { logger, model, pace, slot } = deps;
  const { durable, partition } = slot;
  const leading = () => slot.lease === undefined || slot.lease.holding();
  const fence: Fence = {
    partition,
    holding: leading,
    refused: (reason) => {
      logger.warn(
        { ...log, err: reason, retry_ms: FENCED_LEAD_AGAIN_MS },
        `${model.name} fenced; leads again if it still holds the lease`,
      );
      leadAgainInTurn();
    },
  };
  const log = { durable, partition };
  const registry = deps.feeds?.registry;
  const role = deps.feeds?.role;
  let own: OwnDurable | undefined;
  /** Its own durable is taken and pumping (or, for a follower, the host feeds it). */
  let consuming = false;
  /** stop() was called: nothing is taken again after it. */
  let stopped = false;
  /** Host: the followers it feeds. Follower: the host feeding it. */
  const followers = new Set<Follower>();
  let withdraw: (() => void) | undefined;
  let host: FeedHost | undefined;
  let rejoinAfter = 0;
  /** Follower on its own durable: its pending count, when it was taken or at the last delivery. */
  let knownPending = Number.POSITIVE_INFINITY;

  const lane = createLane({
    jsm: deps.jsm,
    layout: deps.layout,
    logger,
    model,
    pace,
    durable,
    fence,
    ...(deps.pacer ? { pacer: deps.pacer } : {}),
    ...(deps.backlog ? { backlog: deps.backlog } : {}),
    roomMade: () => own?.roomMade(),
    fenced: (err) => fence.refused(err.message),
  });

  /** Hosts: each delivery goes to its own lane and to every follower that keeps up. */
  const push = (msg: Parameters<typeof lane.push>[0]) => {
    lane.push(msg);
    for (const follower of followers) {
      if (follower.queued() < follower.maxQueued) {
        follower.push(msg);
        continue;
      }
      followers.delete(follower);
      follower.unfed("fell_behind");
    }
  };

  const waitWhileFenced = async () => {
    while (!leading() && consuming) await Bun.sleep(FENCED_PAUSE_MS);
  };

  /** Takes its own durable from the model's position (the lowest of its followers') and folds. */
  const consume = async () => {
    const {
      durable: taken,
      fromSeq,
      pending,
    } = await takeOwnDurable({
      nc: deps.nc,
      js: deps.js,
      logger,
      jsm: deps.jsm,
      options: {
        name: durable,
        stream: slot.stream,
        filterSubject: slot.filterSubject,
        ackWaitMs: pace.ackWaitMs,
        maxAckPending: 20_000,
        ackPolicy: "all",
      },
      resumeFrom: model.resumeFrom(),
      ...(followers.size > 0
        ? { lowest: Math.min(...[...followers].map((f) => f.resumeFrom())) }
        : {}),
      push,
      full: () => lane.queued() >= pace.maxBatch * 4,
      // A holder whose lease lapsed (paused past it, or a renewal running late) takes nothing
      // more until the lease is renewed or the holder stands down.
      beforeEach: () => (leading() || !consuming ? undefined : waitWhileFenced()),
      onGap: (gap) => {
        logger.warn(
          { ...log, ...gap },
          `another process took deliveries of the ${durable}'s durable; taking it again from its position`,
        );
        retakeInTurn();
      },
      lost: (why, err) => lostDurable(taken, why, err),
    });
    own = taken;
    consuming = true;
    knownPending = pending;
    const drained = () => {
      knownPending = lane.pending();
      rejoinIfCaughtUp();
    };
    lane.start({ settles: true, drained });
    for (const follower of followers) follower.fed();
    if (role === "host") withdraw = registry?.offer(partition, hostSide);
    logger.info({ ...log, linger_ms: pace.lingerMs, from_seq: fromSeq }, `${model.name} started`);
    rejoinIfCaughtUp();
  };

  const lostDurable = (taken: OwnDurable, why: "ended" | "deleted" | "silent", err?: Error) => {
    if (own !== taken || !consuming || stopped) return;
    const said = {
      ended: `${model.name} consumer ended`,
      deleted: `the ${durable}'s durable was deleted under it; taking it again`,
      silent: `no heartbeat from the ${durable}'s durable; taking it again`,
    }[why];
    if (why === "ended") logger.error({ ...log, err: err?.message }, said);
    else logger.warn(log, said);
    retakeInTurn();
  };

  /**
   * Stops folding. `flush`: write every held job first (a graceful stop). Without it (the lease
   * was lost) nothing more is written: the next holder folds it again from its position.
   */
  const halt = async (flush: boolean) => {
    consuming = false;
    withdraw?.();
    withdraw = undefined;
    for (const follower of followers) follower.unfed("host_halted");
    followers.clear();
    if (host !== undefined) {
      host.detach(followerSide);
      host = undefined;
    }
    const closing = own?.close();
    own = undefined;
    await lane.halt(flush);
    await closing;
  };

  /** Drops what it holds and takes the durable again (views and rows skip what they have). */
  const retake = async () => {
    await halt(false);
    await consumeWhileLeading("could not take its durable again");
  };

  const consumeWhileLeading = (failure: string) =>
    retryWhile({
      step: consume,
      keepTrying: () => !stopped && leading(),
      onError: (err, retryMs) =>
        logger.error({ ...log, err: err.message, retry_ms: retryMs }, `${model.name} ${failure}`),
    });

  const retakeInTurn = () => {
    serially(retake).catch((err: unknown) => {
      logger.error({ ...log, err: (err as Error).message }, `${model.name} retake failed`);
    });
  };

  /**
   * Lease steps, retakes and feed changes run one at a time. Each step's own promise rejects with
   * its error (a failed lead releases the lease); the chain goes on regardless.
   */
  let transition: Promise<void> = Promise.resolve();
  const serially = <T>(next: () => Promise<T>): Promise<T> => {
    const run = transition.then(next);
    transition = run.then(
      () => undefined,
      () => undefined,
    );
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

  /** A lead again is queued and not started yet: a second refusal meanwhile changes nothing. */
  let leadAgainQueued = false;
  const leadAgainInTurn = () => {
    if (leadAgainQueued) return;
    leadAgainQueued = true;
    serially(() => {
      leadAgainQueued = false;
      return leadAgain();
    }).catch((err: unknown) => {
      logger.error({ ...log, err: (err as Error).message }, `${model.name} lead again failed`);
    });
  };

  /** The host's side of a shared feed: attaching takes its durable again with the follower. */
  const hostSide: FeedHost = {
    attach: (follower) =>
      serially(async () => {
        if (!consuming || stopped || !leading()) return false;
        await halt(false);
        followers.add(follower);
        await consumeWhileLeading("could not take its durable again for a follower");
        if (consuming) return true;
        followers.delete(follower);
        return false;
      }),
    detach: (follower) => {
      followers.delete(follower);
    },
  };

  /** The follower's side: fed by the host, it folds the host's deliveries in its own lane. */
  const followerSide: Follower = {
    name: model.name,
    maxQueued: pace.maxBatch * 8,
    resumeFrom: () => model.resumeFrom() ?? 1,
    fed: () => {
      if (!stopped) lane.start({ settles: false });
    },
    push: (msg) => lane.push(msg),
    queued: () => lane.queued(),
    unfed: (reason) => {
      serially(() => unfed(reason)).catch((err: unknown) => {
        logger.error({ ...log, err: (err as Error).message }, `${model.name} unfed failed`);
      });
    },
  };

  /** The host stopped feeding this follower: back to its own durable, from its position. */
  const unfed = async (reason: UnfedReason) => {
    if (host === undefined) return;
    host = undefined;
    if (reason === "fell_behind") {
      rejoinAfter = Date.now() + REJOIN_AFTER_FALLING_BEHIND_MS;
      logger.warn(
        { ...log, rejoin_ms: REJOIN_AFTER_FALLING_BEHIND_MS },
        `${model.name} fell behind the shared feed; catching up on its own durable`,
      );
    }
    // Waits for a write in flight (the store may be what is slow).
    await lane.halt(false);
    if (!stopped && leading()) await consumeWhileLeading("could not take its durable again");
  };

  /**
   * A follower on its own durable that has caught up (what is pending fits one round) asks its
   * partition's host to feed it, and deletes its own durable while fed (nothing would read it, and
   * its pending count would read as lag).
   */
  const rejoinIfCaughtUp = () => {
    if (role !== "follower" || host !== undefined || !consuming) return;
    if (stopped || !leading() || Date.now() < rejoinAfter) return;
    if (knownPending >= pace.maxBatch || registry?.host(partition) === undefined) return;
    serially(rejoin).catch((err: unknown) => {
      logger.error(
        { ...log, err: (err as Error).message },
        `${model.name} could not join the feed`,
      );
    });
  };

  const rejoin = async () => {
    const offered = registry?.host(partition);
    if (offered === undefined || host !== undefined || !consuming || stopped || !leading()) return;
    await halt(true);
    await deleteOwnDurable();
    host = offered;
    const attached = await offered.attach(followerSide);
    if (attached && host === offered && !stopped) {
      logger.info(log, `${model.name} folds the shared feed of its partition`);
      return;
    }
    // Stopped or stood down while the host took its durable again: it feeds nothing here.
    if (attached) offered.detach(followerSide);
    if (host !== offered) return;
    host = undefined;
    if (!stopped && leading()) await consumeWhileLeading("could not take its durable again");
  };

  /**
   * Best effort: a durable left behind reads as lag and nothing else (nats-server 2.9 can refuse
   * a delete while its store is busy, "directory not empty"); the next lead recreates it anyway.
   */
  const deleteOwnDurable = async () => {
    try {
      await deps.jsm.consumers.delete(slot.stream, durable);
    } catch (err) {
      if (isJsError(err, "consumerNotFound")) return;
      logger.warn(
        { ...log, err: (err as Error).message },
        `${model.name} could not delete its own durable while fed; left in place`,
      );
    }
  };

  const unwatch =
    role === "follower" ? registry?.watch(partition, () => rejoinIfCaughtUp()) : undefined;

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
      unwatch?.();
      await halt(true);
      await slot.lease?.stop();
    },
    appliedSeq: lane.appliedSeq,
  };
}
