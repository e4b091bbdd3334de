import type { JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { Logger } from "../log/index.ts";
import {
  type ClaimRecord,
  claimKey,
  createClaimsWatch,
  memberGoneReader,
  rebuildLeaseReader,
} from "./claims-view.ts";
// Read at call time only: index.ts re-exports this module.
import {
  LEASE_TTL_MS,
  type Lease,
  type LeaseHandlers,
  SIT_OUT_AFTER_FAILED_LEAD_MS,
} from "./index.ts";
import { createMemberRecord } from "./member-record.ts";
import { decideClaims } from "./partitions-decide.ts";

const RENEW_EVERY_MS = 1_000;
/**
 * Beyond the TTL: a member not seen renewing for this much longer is counted out of the share
 * (its record has expired by then, unless a renewal reached this process late).
 */
const MEMBER_GONE_SLACK_MS = 250;
/**
 * Renewals with an unchanged membership before anyone releases a partition (no flapping): longer
 * than a member record lives, so a member that joins again under a new id, its old record still
 * counted for up to the TTL, makes nobody release.
 */
const STABLE_TICKS = 4;

/** A partition handed over is left to the member it was handed to this long. */
const HAND_OVER_SIT_OUT_MS = 30_000;

/** Hands out one {@link Lease} per partition of each group; all share one member record. */
export interface PartitionClaims {
  /** The lease of a group's partition: `slot.lease = claims.lease("projector", p)`. */
  lease(group: string, partition: number): Lease;
  /** The partitions of `group` this process holds now. */
  held(group: string): number[];
  /** Releases every claim and the member record, so the others take over at once. */
  stop(): Promise<void>;
}

interface Held {
  readonly group: string;
  readonly partition: number;
  readonly revision: number;
  readonly epoch: number;
}

const GROUP_NAME = /^[A-Za-z0-9_-]+$/;

/**
 * Fair-share partition claims (docs/architecture.md, "Partition claims"). The process renews one
 * member record (`members.<id>` in the lease bucket, TTL 3 s, naming its groups) once a second by
 * compare-and-set, whatever the groups and P; each partition's claim key (`<group>.p<p>` in the
 * claims bucket, no TTL) names its owner and an epoch, and is valid while the owner's member
 * record lives. A claim is taken with create or compare-and-set over a free one (released, or its
 * owner's record gone from the bucket); what to claim or release is {@link decideClaims}, per
 * group. A holder whose own record was not renewed within two thirds of the TTL reports not
 * holding, before anyone can take over; a renewal that fails loses every partition, and the
 * process joins again as a new member.
 */
export function createPartitionClaims(deps: {
  readonly leases: KV;
  /**
   * Reads a member record from the lease stream's leader before its claims are taken over. A
   * KV get is a direct get, which any replica may answer: one that is behind (a node just
   * restarted) has every member record expired, and would make live members look gone.
   */
  readonly jsm: JetStreamManager;
  readonly claims: KV;
  /** P per group: "projector" → 16 makes partitions 0 … 15 of the projector's group. */
  readonly groups: Readonly<Record<string, number>>;
  /**
   * Group → the group it follows (the indexer follows the projector where one process runs both):
   * it prefers, and hands over, partitions so that one member holds each in both.
   */
  readonly follows?: Readonly<Record<string, string>>;
  /**
   * The lease-bucket key a rebuild of a group's partition holds (`switchyard projector rebuild`):
   * while it is held no member claims the partition.
   */
  readonly rebuildKey?: (group: string, partition: number) => string;
  /** Who this is (host and pid), for operators reading the buckets. */
  readonly holder: string;
  readonly logger: Logger;
}): PartitionClaims {
  const { logger } = deps;
  const groups = Object.keys(deps.groups);
  for (const group of groups) {
    if (!GROUP_NAME.test(group)) throw new RangeError(`claims group name "${group}" is not a word`);
  }
  const self = createMemberRecord({ leases: deps.leases, holder: deps.holder });
  /** By claim key. */
  const held = new Map<string, Held>();
  const handlers = new Map<string, LeaseHandlers>();
  const sitOutUntil = new Map<string, number>();
  let started = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let goneTimer: ReturnType<typeof setTimeout> | undefined;
  let busy: Promise<void> = Promise.resolve();
  let membership = "";
  let stableTicks = 0;

  const serialised = (step: () => Promise<void>) => {
    busy = busy.then(step).catch((err: unknown) => {
      logger.error(
        { member: self.id(), err: (err as Error).message },
        "partition claims step failed",
      );
    });
    return busy;
  };
  const watch = createClaimsWatch({
    jsm: deps.jsm,
    leases: deps.leases,
    claims: deps.claims,
    goneAfterMs: LEASE_TTL_MS + MEMBER_GONE_SLACK_MS,
    logger,
    onChange: () => {
      if (started && !stopped) void serialised(decideAll);
    },
  });
  const holding = (key: string) =>
    !stopped && held.has(key) && Date.now() - self.renewedAt() < (LEASE_TTL_MS * 2) / 3;
  const log = (key: string) => ({ claim: key, member: self.id() });

  /** Gives a partition up: holding() turns false first, then the work stops. */
  const standDown = async (key: string, h = handlers.get(key)) => {
    if (!held.delete(key)) return;
    await h?.standDown().catch((err: unknown) => {
      logger.error({ ...log(key), err: (err as Error).message }, "stand-down failed");
    });
  };

  /** Marks a claim free (no owner), keeping its epoch; the error when the write was refused. */
  const writeFree = (key: string, seen: { readonly epoch: number; readonly revision: number }) => {
    const value: ClaimRecord = { owner: "", holder: "", epoch: seen.epoch };
    return deps.claims.update(key, JSON.stringify(value), seen.revision).then(
      (revision) => void watch.noteClaim(key, { revision, epoch: seen.epoch, owner: undefined }),
      (err: unknown) => err as Error,
    );
  };

  /** Stands down and marks the claim free, so another member takes it now. */
  const release = async (key: string, h = handlers.get(key)) => {
    const mine = held.get(key);
    if (mine === undefined) return;
    await standDown(key, h);
    const refused = await writeFree(key, mine);
    if (refused !== undefined) {
      logger.warn(
        { ...log(key), err: refused.message },
        "release not written; the claim is freed at a later renewal",
      );
      await watch.reread(key);
    }
  };

  const loseAll = async (why: string) => {
    if (held.size > 0) logger.warn({ member: self.id(), why }, "member record lost; standing down");
    for (const key of [...held.keys()]) await standDown(key);
    watch.forgetMember(self.id());
    self.rejoin();
  };

  const renew = async () => {
    // Only the groups it competes in: a member counted in a group's share that never claims
    // would keep a partition free for good.
    const competing = groups.filter((g) =>
      [...handlers.keys()].some((k) => k.startsWith(`${g}.p`)),
    );
    const lost = await self.renew(competing);
    if (lost === undefined) watch.noteMember(self.id(), competing);
    else await loseAll(lost.message);
  };

  const leadFailed = async (key: string, err: Error) => {
    logger.error(
      { ...log(key), err: err.message, retry_ms: SIT_OUT_AFTER_FAILED_LEAD_MS },
      "could not start the partition's work; releasing its claim",
    );
    sitOutUntil.set(key, Date.now() + SIT_OUT_AFTER_FAILED_LEAD_MS);
    await release(key);
  };

  /**
   * Asked before a claim and again after it: a rebuild takes its lease first and then reads the
   * claim (shared/projection/rebuild-lease.ts), so one of the two sees the other.
   */
  const rebuildHolds = rebuildLeaseReader({ jsm: deps.jsm, key: deps.rebuildKey, logger });

  /**
   * Claims a partition (create, or compare-and-set over a free claim) and starts its work.
   * `ownerGone` asks the server whether a member record is gone (expired or deleted): a claim
   * is taken over only on its word, not on this process's clock.
   */
  const claim = async (
    group: string,
    partition: number,
    ownerGone: (owner: string) => Promise<boolean>,
  ) => {
    const key = claimKey(group, partition);
    const seen = watch.claim(key);
    const owner = seen?.owner;
    if (owner !== undefined && owner !== self.id() && !(await ownerGone(owner))) return;
    if (await rebuildHolds(group, partition)) return;
    const epoch = (seen?.epoch ?? 0) + 1;
    const value: ClaimRecord = { owner: self.id(), holder: deps.holder, epoch };
    let revision: number;
    try {
      revision =
        seen === undefined
          ? await deps.claims.create(key, JSON.stringify(value))
          : await deps.claims.update(key, JSON.stringify(value), seen.revision);
    } catch (err) {
      // Another member claimed it first (the watch tells), or the claims' store is away.
      logger.info({ ...log(key), err: (err as Error).message }, "claim not taken");
      await watch.reread(key);
      return;
    }
    held.set(key, { group, partition, revision, epoch });
    watch.noteClaim(key, { revision, epoch, owner: self.id() });
    if (await rebuildHolds(group, partition)) {
      logger.info(log(key), "a rebuild holds the partition; claim released");
      return release(key);
    }
    logger.info({ ...log(key), epoch, over: owner }, "partition claimed");
    // Not awaited: a slow start of one partition's work must not hold back the member renewal
    // (every partition's holding() rests on it). The work orders its own lead and stand-down.
    handlers
      .get(key)
      ?.lead()
      .catch((err: unknown) =>
        serialised(async () => {
          if (held.get(key)?.revision === revision) await leadFailed(key, err as Error);
        }),
      );
  };

  /**
   * Claims the bucket names this member for that it does not hold are freed: a release whose
   * write failed, or a lead that failed while the claim's store was away. Left as they are, the
   * member counts them as its own share and nobody else takes them (the owner lives).
   */
  const freeOrphans = async () => {
    for (const [key, seen] of watch.ownedBy(self.id())) {
      if (held.has(key)) continue;
      const refused = await writeFree(key, seen);
      if (refused === undefined) {
        logger.info(log(key), "claim held by nobody freed");
        continue;
      }
      // Changed meanwhile (the watch tells), or the store is away: tried again next tick.
      logger.info({ ...log(key), err: refused.message }, "claim held by nobody not freed");
      await watch.reread(key);
    }
  };

  /** Partitions claimed over this process's head (its record lapsed) are stood down. */
  const reconcile = async () => {
    for (const [key, mine] of [...held]) {
      const seen = watch.claim(key);
      if (seen !== undefined && seen.revision > mine.revision && seen.owner !== self.id()) {
        logger.warn(log(key), "partition claimed by another member; standing down");
        await standDown(key);
      }
    }
  };

  const wanted = (group: string) => {
    const now = Date.now();
    const partitions = new Set<number>();
    for (let p = 0; p < (deps.groups[group] ?? 0); p++) {
      const key = claimKey(group, p);
      if (handlers.has(key) && (sitOutUntil.get(key) ?? 0) <= now) partitions.add(p);
    }
    return partitions;
  };

  const decideGroup = async (group: string, ownerGone: (owner: string) => Promise<boolean>) => {
    const followed = deps.follows?.[group];
    const actions = decideClaims({
      me: self.id(),
      total: deps.groups[group] ?? 0,
      wanted: wanted(group),
      members: watch.liveMembers(group),
      owners: watch.owners(group),
      stable: stableTicks >= STABLE_TICKS,
      ...(followed
        ? { follow: { mine: new Set(heldOf(followed)), owners: watch.owners(followed) } }
        : {}),
    });
    for (const action of actions) {
      if (stopped) return;
      const key = claimKey(group, action.partition);
      if (action.kind === "claim") await claim(group, action.partition, ownerGone);
      else if (action.kind === "release") {
        logger.info(log(key), "partition released for the fair share");
        await release(key);
      } else {
        logger.info(log(key), `partition handed to the member that holds it in ${followed}`);
        sitOutUntil.set(key, Date.now() + HAND_OVER_SIT_OUT_MS);
        await release(key);
      }
    }
  };

  async function decideAll() {
    if (stopped || !self.joined()) return;
    await reconcile();
    await freeOrphans();
    const ownerGone = memberGoneReader(deps.jsm);
    for (const group of groups) await decideGroup(group, ownerGone);
  }

  /**
   * A decision at the moment the first other member would count as gone: a member that died is
   * taken over then, not at the next renewal up to a second later. Set again at every renewal, so
   * it fires only when someone stops renewing.
   */
  const decideWhenMemberGone = () => {
    clearTimeout(goneTimer);
    const at = watch.firstGoneAt(self.id());
    if (at === undefined || stopped) return;
    goneTimer = setTimeout(() => void serialised(decideAll), Math.max(0, at - Date.now()) + 1);
  };

  const tick = async () => {
    if (stopped) return;
    await renew();
    const now = groups.map((g) => `${g}:${watch.liveMembers(g).join(",")}`).join(" ");
    stableTicks = now === membership ? stableTicks + 1 : 0;
    membership = now;
    await decideAll();
    decideWhenMemberGone();
  };

  /**
   * Renewals end on a whole second of the process's clock, so every member renews at about the
   * same moment: each process's reply, its own renewal echoed by the watch and the other members'
   * renewals arrive together and wake an idle process once a second, not once for each.
   */
  const schedule = () => {
    if (stopped) return;
    const wait = RENEW_EVERY_MS - (Date.now() % RENEW_EVERY_MS);
    timer = setTimeout(() => void serialised(tick).then(schedule), wait);
  };

  const stopAll = async () => {
    if (stopped) return;
    stopped = true;
    clearTimeout(timer);
    clearTimeout(goneTimer);
    await busy;
    for (const key of [...held.keys()]) await release(key);
    await watch.close();
    await self.remove();
  };

  const lease = (group: string, partition: number): Lease => {
    const total = deps.groups[group];
    if (total === undefined) throw new RangeError(`"${group}" is not a claims group`);
    if (!Number.isInteger(partition) || partition < 0 || partition >= total) {
      throw new RangeError(`partition ${partition} is outside 0..${total - 1} of ${group}`);
    }
    const key = claimKey(group, partition);
    return {
      async start(h) {
        handlers.set(key, h);
        if (started) return serialised(decideAll);
        started = true;
        await watch.open();
        await serialised(tick);
        schedule();
      },
      holding: () => holding(key),
      async stop() {
        const h = handlers.get(key);
        if (h === undefined) return;
        handlers.delete(key);
        await serialised(() => release(key, h));
        if (handlers.size === 0) await stopAll();
      },
    };
  };

  const heldOf = (group: string) =>
    [...held]
      .filter(([key, h]) => h.group === group && holding(key))
      .map(([, h]) => h.partition)
      .sort((a, b) => a - b);

  return { lease, held: heldOf, stop: stopAll };
}
