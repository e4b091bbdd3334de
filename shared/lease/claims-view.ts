import type { KV, KvEntry } from "@nats-io/kv";
import type { Logger } from "../log/index.ts";

/** KV bucket of partition claims: no TTL; a claim lives as long as its owner's member record. */
export const CLAIMS_BUCKET = "sy_claims";

/** What a claim key holds. */
export interface ClaimRecord {
  /** The owning member's id (its member record's key ends with it). */
  readonly owner: string;
  /** Who that is (host and pid), for operators reading the bucket. */
  readonly holder: string;
  /** Raised by every claim of the partition: a newer owner has a higher epoch. */
  readonly epoch: number;
}

/** A claim key as last seen: its revision (for compare-and-set), epoch and, unless free, owner. */
export interface SeenClaim {
  readonly revision: number;
  readonly epoch: number;
  readonly owner: string | undefined;
}

export const claimKey = (group: string, partition: number) => `${group}.p${partition}`;
export const memberKey = (group: string, member: string) => `members.${group}.${member}`;

/** A released claim keeps its epoch and names no owner; a deleted or unreadable one is free. */
function parseClaim(entry: KvEntry): SeenClaim {
  const free = { revision: entry.revision, epoch: 0, owner: undefined };
  if (entry.operation !== "PUT") return free;
  try {
    const value = entry.json<Partial<ClaimRecord>>();
    const epoch = typeof value.epoch === "number" ? value.epoch : 0;
    const owner = typeof value.owner === "string" && value.owner !== "" ? value.owner : undefined;
    return { revision: entry.revision, epoch, owner };
  } catch {
    return free;
  }
}

/**
 * What one process knows of its group, kept current by two KV watches (claim keys, member
 * records): no polling. A watch delivers changes only, so a group at rest costs nothing here
 * but the members' renewals. Member records expire silently on nats-server 2.9 (no marker), so
 * a member counts as alive while it was seen renewing within `goneAfterMs`; taking over a claim
 * still checks the owner's record is gone from the bucket (the server's word, not this clock).
 */
export function createGroupView(deps: {
  readonly leases: KV;
  readonly claims: KV;
  readonly group: string;
  readonly goneAfterMs: number;
  readonly logger: Logger;
  /** A claim was released or a member left: a decision is due now, not at the next tick. */
  readonly onChange: () => void;
}) {
  const claims = new Map<number, SeenClaim>();
  const seenAt = new Map<string, number>();
  const stops: (() => void)[] = [];
  const claimPrefix = `${deps.group}.p`;
  const memberPrefix = `members.${deps.group}.`;

  const onClaim = (entry: KvEntry) => {
    if (!entry.key.startsWith(claimPrefix)) return;
    const partition = Number(entry.key.slice(claimPrefix.length));
    if (!Number.isInteger(partition)) return;
    const seen = claims.get(partition);
    if (seen !== undefined && seen.revision >= entry.revision) return;
    const claim = parseClaim(entry);
    claims.set(partition, claim);
    if (claim.owner === undefined) deps.onChange();
  };

  const onMember = (entry: KvEntry) => {
    const member = entry.key.slice(memberPrefix.length);
    if (entry.operation === "PUT") {
      if (!seenAt.has(member)) deps.onChange();
      seenAt.set(member, Date.now());
    } else if (seenAt.delete(member)) deps.onChange();
  };

  const follow = async (kv: KV, key: string, apply: (entry: KvEntry) => void) => {
    const watch = await kv.watch({ key });
    stops.push(() => watch.stop());
    void (async () => {
      for await (const entry of watch) apply(entry);
    })().catch((err: unknown) => {
      deps.logger.error({ group: deps.group, err: (err as Error).message }, "claims watch ended");
    });
  };

  return {
    async open() {
      await follow(deps.claims, `${deps.group}.>`, onClaim);
      await follow(deps.leases, `${memberPrefix}>`, onMember);
    },
    close() {
      for (const stop of stops.splice(0)) stop();
    },
    /** Records a write of this process at once (its watch echo comes later). */
    noteClaim(partition: number, seen: SeenClaim) {
      const known = claims.get(partition);
      if (known === undefined || known.revision < seen.revision) claims.set(partition, seen);
    },
    noteMember(member: string) {
      seenAt.set(member, Date.now());
    },
    forgetMember(member: string) {
      seenAt.delete(member);
    },
    claim: (partition: number) => claims.get(partition),
    /** Members seen renewing within `goneAfterMs`; the others are dropped. */
    liveMembers(): string[] {
      const cutoff = Date.now() - deps.goneAfterMs;
      for (const [member, at] of seenAt) if (at < cutoff) seenAt.delete(member);
      return [...seenAt.keys()].sort();
    },
    /** The owner of each claimed partition. */
    owners(): Map<number, string> {
      const owners = new Map<number, string>();
      for (const [p, seen] of claims) if (seen.owner) owners.set(p, seen.owner);
      return owners;
    },
  };
}

export type GroupView = ReturnType<typeof createGroupView>;
