import { randomBytes } from "node:crypto";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Logger } from "../log/index.ts";
import {
  CLAIMS_BUCKET,
  type ClaimRecord,
  claimKey,
  createGroupView,
  memberKey,
} from "./claims-view.ts";
// Read at call time only: index.ts re-exports this module.
import {
  LEASE_TTL_MS,
  type Lease,
  type LeaseHandlers,
  SIT_OUT_AFTER_FAILED_LEAD_MS,
} from "./index.ts";
import { decideClaims } from "./partitions-decide.ts";

const RENEW_EVERY_MS = 1_000;
/** Beyond the TTL: a member not seen renewing for this much longer is counted out of the share. */
const MEMBER_GONE_SLACK_MS = 500;
/** Renewals with an unchanged membership before anyone releases a partition (no flapping). */
const STABLE_TICKS = 2;

/** Hands out one {@link Lease} per partition of a group; all of them share one member record. */
export interface PartitionClaims {
  /** The lease of partition p: `slot.lease = claims.lease(p)`. */
  lease(partition: number): Lease;
  /** The partitions this process holds now. */
  held(): number[];
  /** Releases every claim and the member record, so the others take over at once. */
  stop(): Promise<void>;
}

/** Opens (creating when missing) the claims bucket: no TTL, one value per key. */
export async function openClaimsBucket(
  nc: NatsConnection,
  options: { readonly replicas: number },
): Promise<KV> {
  return new Kvm(nc).create(CLAIMS_BUCKET, {
    history: 1,
    replicas: options.replicas,
    storage: "file",
  });
}

interface Held {
  readonly revision: number;
  readonly epoch: number;
}

/**
 * Fair-share partition claims (docs/architecture.md, "Partition claims"). The process renews one
 * member record (`members.<group>.<id>` in the lease bucket, TTL 3 s) once a second by
 * compare-and-set, whatever P; each partition's claim key (`<group>.p<p>` in the claims bucket,
 * no TTL) names its owner and an epoch, and is valid while the owner's member record lives. A
 * claim is taken with create or compare-and-set over a free one (released, or its owner's record
 * gone from the bucket). What to claim or release is {@link decideClaims}. A holder whose own
 * record was not renewed within two thirds of the TTL reports not holding, before anyone can take
 * over; a renewal that fails loses every partition, and the process joins again as a new member.
 */
export function createPartitionClaims(deps: {
  readonly leases: KV;
  readonly claims: KV;
  /** "projector", "indexer": the claim keys and member records are per group. */
  readonly group: string;
  /** P: the group's partitions are 0 … P - 1. */
  readonly partitions: number;
  /** Who this is (host and pid), for operators reading the buckets. */
  readonly holder: string;
  readonly logger: Logger;
}): PartitionClaims {
  const { group, logger } = deps;
  const newMember = () => randomBytes(6).toString("hex");
  let member = newMember();
  let memberRevision = 0;
  let renewedAt = 0;
  const held = new Map<number, Held>();
  const handlers = new Map<number, LeaseHandlers>();
  const sitOutUntil = new Map<number, number>();
  let started = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let busy: Promise<void> = Promise.resolve();
  let membership = "";
  let stableTicks = 0;

  const serialised = (step: () => Promise<void>) => {
    busy = busy.then(step).catch((err: unknown) => {
      logger.error({ group, err: (err as Error).message }, "partition claims step failed");
    });
    return busy;
  };
  const view = createGroupView({
    leases: deps.leases,
    claims: deps.claims,
    group,
    goneAfterMs: LEASE_TTL_MS + MEMBER_GONE_SLACK_MS,
    logger,
    onChange: () => {
      if (started && !stopped) void serialised(decide);
    },
  });
  const holding = (p: number) =>
    !stopped && held.has(p) && Date.now() - renewedAt < (LEASE_TTL_MS * 2) / 3;
  const log = (p: number) => ({ group, partition: p, member });

  /** Gives partition p up: holding() turns false first, then the work stops. */
  const standDown = async (p: number, h = handlers.get(p)) => {
    if (!held.delete(p)) return;
    await h?.standDown().catch((err: unknown) => {
      logger.error({ ...log(p), err: (err as Error).message }, "stand-down failed");
    });
  };

  /** Stands down and marks the claim free, keeping its epoch, so another member takes it now. */
  const release = async (p: number, h = handlers.get(p)) => {
    const mine = held.get(p);
    if (mine === undefined) return;
    await standDown(p, h);
    const value: ClaimRecord = { owner: "", holder: "", epoch: mine.epoch };
    await deps.claims
      .update(claimKey(group, p), JSON.stringify(value), mine.revision)
      .catch(() => undefined);
  };

  const loseAll = async (why: string) => {
    if (held.size > 0) logger.warn({ group, member, why }, "member record lost; standing down");
    for (const p of [...held.keys()]) await standDown(p);
    view.forgetMember(member);
    member = newMember();
    memberRevision = 0;
  };

  const renew = async () => {
    const value = JSON.stringify({ holder: deps.holder, renewed_at: new Date().toISOString() });
    const key = memberKey(group, member);
    try {
      memberRevision =
        memberRevision === 0
          ? await deps.leases.create(key, value)
          : await deps.leases.update(key, value, memberRevision);
      renewedAt = Date.now();
      view.noteMember(member);
    } catch (err) {
      await loseAll((err as Error).message);
    }
  };

  const leadFailed = async (p: number, err: Error) => {
    logger.error(
      { ...log(p), err: err.message, retry_ms: SIT_OUT_AFTER_FAILED_LEAD_MS },
      "could not start the partition's work; releasing its claim",
    );
    sitOutUntil.set(p, Date.now() + SIT_OUT_AFTER_FAILED_LEAD_MS);
    await release(p);
  };

  /** Claims p (create, or compare-and-set over a free claim) and starts its work. */
  const claim = async (p: number) => {
    const seen = view.claim(p);
    const owner = seen?.owner;
    if (owner !== undefined && owner !== member) {
      // The server's word that the owner is gone: its member record expired or was deleted.
      const record = await deps.leases.get(memberKey(group, owner));
      if (record !== null && record.operation === "PUT") return view.noteMember(owner);
    }
    const epoch = (seen?.epoch ?? 0) + 1;
    const value = JSON.stringify({ owner: member, holder: deps.holder, epoch } as ClaimRecord);
    const key = claimKey(group, p);
    let revision: number;
    try {
      revision =
        seen === undefined
          ? await deps.claims.create(key, value)
          : await deps.claims.update(key, value, seen.revision);
    } catch {
      return; // another member claimed it first; its watch entry tells
    }
    held.set(p, { revision, epoch });
    view.noteClaim(p, { revision, epoch, owner: member });
    logger.info({ ...log(p), epoch, over: owner }, "partition claimed");
    // Not awaited: a slow start of one partition's work must not hold back the member renewal
    // (every partition's holding() rests on it). The work orders its own lead and stand-down.
    const started = handlers.get(p)?.lead();
    started?.catch((err: unknown) =>
      serialised(async () => {
        if (held.get(p)?.revision === revision) await leadFailed(p, err as Error);
      }),
    );
  };

  /** Partitions claimed over this process's head (its record lapsed) are stood down. */
  const reconcile = async () => {
    for (const [p, mine] of [...held]) {
      const seen = view.claim(p);
      if (seen !== undefined && seen.revision > mine.revision && seen.owner !== member) {
        logger.warn(log(p), "partition claimed by another member; standing down");
        await standDown(p);
      }
    }
  };

  const wanted = () => {
    const now = Date.now();
    return new Set([...handlers.keys()].filter((p) => (sitOutUntil.get(p) ?? 0) <= now));
  };

  async function decide() {
    if (stopped || memberRevision === 0) return;
    await reconcile();
    const actions = decideClaims({
      me: member,
      total: deps.partitions,
      wanted: wanted(),
      members: view.liveMembers(),
      owners: view.owners(),
      stable: stableTicks >= STABLE_TICKS,
    });
    for (const action of actions) {
      if (stopped) return;
      if (action.kind === "claim") await claim(action.partition);
      else {
        logger.info(log(action.partition), "partition released for the fair share");
        await release(action.partition);
      }
    }
  }

  const tick = async () => {
    if (stopped) return;
    await renew();
    const now = view.liveMembers().join(",");
    stableTicks = now === membership ? stableTicks + 1 : 0;
    membership = now;
    await decide();
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => void serialised(tick).then(schedule), RENEW_EVERY_MS);
  };

  const begin = async () => {
    started = true;
    await view.open();
    await serialised(tick);
    schedule();
  };

  const stopAll = async () => {
    if (stopped) return;
    stopped = true;
    clearTimeout(timer);
    await busy;
    for (const p of [...held.keys()]) await release(p);
    view.close();
    if (memberRevision !== 0) {
      await deps.leases
        .delete(memberKey(group, member), { previousSeq: memberRevision })
        .catch(() => undefined);
    }
  };

  const lease = (p: number): Lease => {
    if (!Number.isInteger(p) || p < 0 || p >= deps.partitions) {
      throw new RangeError(`partition ${p} is outside 0..${deps.partitions - 1} of ${group}`);
    }
    return {
      async start(h) {
        handlers.set(p, h);
        if (!started) return begin();
        await serialised(decide);
      },
      holding: () => holding(p),
      async stop() {
        const h = handlers.get(p);
        if (h === undefined) return;
        handlers.delete(p);
        await serialised(() => release(p, h));
        if (handlers.size === 0) await stopAll();
      },
    };
  };

  return {
    lease,
    held: () => [...held.keys()].filter(holding).sort((a, b) => a - b),
    stop: stopAll,
  };
}
