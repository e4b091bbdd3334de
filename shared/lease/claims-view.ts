import type { JetStreamManager, StoredMsg } from "@nats-io/jetstream";
import { type KV, type KvEntry, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { createBucket } from "../bus/index.ts";
import type { Logger } from "../log/index.ts";
// Read at call time only: index.ts re-exports this module.
import { LEASE_BUCKET } from "./index.ts";

/** KV bucket of partition claims: no TTL; a claim lives as long as its owner's member record. */
export const CLAIMS_BUCKET = "sy_claims";

/** What a claim key holds. */
export interface ClaimRecord {
  /** The owning member's id (its member record is `members.<owner>`); empty when released. */
  readonly owner: string;
  /** Who that is (host and pid), for operators reading the bucket. */
  readonly holder: string;
  /** Raised by every claim of the partition: a newer owner has a higher epoch. */
  readonly epoch: number;
}

/** What a member record holds. */
export interface MemberRecord {
  readonly holder: string;
  /** The groups whose partitions the member shares ("projector", "indexer"). */
  readonly groups: readonly string[];
  readonly renewed_at: string;
}

/** A claim key as last seen: its revision (for compare-and-set), epoch and, unless free, owner. */
export interface SeenClaim {
  readonly revision: number;
  readonly epoch: number;
  readonly owner: string | undefined;
}

export const claimKey = (group: string, partition: number) => `${group}.p${partition}`;
export const MEMBERS_PREFIX = "members.";
export const memberKey = (member: string) => `${MEMBERS_PREFIX}${member}`;

/** What a claim key holds, as a KV entry or a stored message read from the stream's leader. */
interface ClaimEntry {
  readonly revision: number;
  readonly operation: string;
  json<T>(): T;
}

/** A claim as the stream's leader stores it (a message get of `$KV.sy_claims.<key>`). */
export function claimOfStored(msg: StoredMsg): SeenClaim {
  return parseClaim({
    revision: msg.seq,
    // A PUT carries no operation header; a delete or purge marker does.
    operation: msg.header?.get("KV-Operation") || "PUT",
    json: <T>() => msg.json<T>(),
  });
}

/** A released claim keeps its epoch and names no owner; a deleted or unreadable one is free. */
function parseClaim(entry: ClaimEntry): SeenClaim {
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

function parseGroups(entry: KvEntry): string[] {
  try {
    const groups = entry.json<Partial<MemberRecord>>().groups;
    return Array.isArray(groups) ? groups.filter((g) => typeof g === "string") : [];
  } catch {
    return [];
  }
}

/** How long a stopping process waits for a watch's consumer to be deleted (its stop waits). */
const WATCH_DELETE_WAIT_MS = 1_000;

/**
 * Stops a KV watch and deletes its consumer. nats.js stops a watch's ordered consumer without
 * deleting it, so the server would keep it for its inactive threshold (5 minutes), counting every
 * later put as pending (what `nats consumer report` shows of a stopped process). The consumer is
 * the one the watch holds now (nats.js renames it at each re-creation); the watch iterator keeps it
 * in `_data` (declared by nats.js's QueuedIteratorImpl). Best effort, and bounded so that a stop
 * with nats-server out of reach is not held up: a consumer not deleted expires.
 */
async function stopWatch(watch: Awaited<ReturnType<KV["watch"]>>): Promise<void> {
  watch.stop();
  const consumer = (watch as { _data?: unknown })._data as
    | { delete?: () => Promise<boolean> }
    | undefined;
  const deleted = consumer?.delete?.().catch(() => false);
  if (deleted === undefined) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, WATCH_DELETE_WAIT_MS);
  });
  await Promise.race([deleted, waited]);
  clearTimeout(timer);
}

/**
 * Follows a KV watch until closed. nats.js re-creates a watch's ordered consumer by itself
 * (missed heartbeats, a restarted server); should the watch end anyway, it is opened again.
 */
function follow(deps: {
  readonly kv: KV;
  readonly key: string;
  readonly apply: (entry: KvEntry) => void;
  readonly closed: () => boolean;
  readonly logger: Logger;
}): { opened: Promise<() => Promise<void>> } {
  let stop = async () => {};
  const open = async () => {
    const watch = await deps.kv.watch({ key: deps.key });
    stop = () => stopWatch(watch);
    void (async () => {
      for await (const entry of watch) deps.apply(entry);
    })()
      .catch((err: unknown) => {
        deps.logger.error({ key: deps.key, err: (err as Error).message }, "claims watch failed");
      })
      .finally(() => {
        if (!deps.closed()) setTimeout(() => void open().catch(() => undefined), 1_000);
      });
  };
  return { opened: open().then(() => () => stop()) };
}

/**
 * What one process knows of the claims and members, kept current by two KV watches: no
 * polling. A watch delivers changes only, so at rest nothing arrives but the members' renewals
 * (and the watches' idle heartbeats). Member records expire silently on nats-server 2.9 (no
 * marker), so a member counts as alive while seen renewing within `goneAfterMs`; taking over a
 * claim still checks that the owner's record is gone from the bucket (the server's word).
 */
export function createClaimsWatch(deps: {
  /** Rereads a claim from the stream's leader (reread). */
  readonly jsm: JetStreamManager;
  readonly leases: KV;
  readonly claims: KV;
  readonly goneAfterMs: number;
  readonly logger: Logger;
  /** A claim was released or a member came or left: a decision is due now, not at the next tick. */
  readonly onChange: () => void;
}) {
  const claims = new Map<string, SeenClaim>();
  const members = new Map<string, { seenAt: number; groups: string[] }>();
  let closed = false;
  const stops: Promise<() => Promise<void>>[] = [];

  const onClaim = (entry: KvEntry) => {
    const seen = claims.get(entry.key);
    if (seen !== undefined && seen.revision >= entry.revision) return;
    const claim = parseClaim(entry);
    claims.set(entry.key, claim);
    if (claim.owner === undefined) deps.onChange();
  };

  const onMember = (entry: KvEntry) => {
    const member = entry.key.slice(MEMBERS_PREFIX.length);
    if (entry.operation === "PUT") {
      const known = members.has(member);
      members.set(member, { seenAt: Date.now(), groups: parseGroups(entry) });
      if (!known) deps.onChange();
    } else if (members.delete(member)) deps.onChange();
  };

  const watch = (kv: KV, key: string, apply: (entry: KvEntry) => void) =>
    follow({ kv, key, apply, closed: () => closed, logger: deps.logger }).opened;

  return {
    async open() {
      stops.push(
        watch(deps.claims, ">", onClaim),
        watch(deps.leases, `${MEMBERS_PREFIX}>`, onMember),
      );
      await Promise.all(stops);
    },
    async close() {
      closed = true;
      await Promise.all((await Promise.all(stops.splice(0))).map((stop) => stop()));
    },
    /** Records a write of this process at once (its watch echo comes later). */
    noteClaim(key: string, seen: SeenClaim) {
      const known = claims.get(key);
      if (known === undefined || known.revision < seen.revision) claims.set(key, seen);
    },
    /**
     * Reads a claim from the claims stream's leader and records it as stored, even over a higher
     * revision seen. After a refused compare-and-set the next decision starts from what is stored,
     * whatever this process saw: the watch may be behind (its ordered consumer is re-created only
     * after missed heartbeats when a node dies), a write whose answer was lost may have landed,
     * and a revision seen may be one a leader change rolled back (seen in the cluster test: every
     * claim of a partition refused, "wrong last sequence").
     */
    async reread(key: string) {
      const msg = await deps.jsm.streams
        .getMessage(`KV_${CLAIMS_BUCKET}`, { last_by_subj: `$KV.${CLAIMS_BUCKET}.${key}` })
        .catch((err: unknown) => {
          deps.logger.info(
            { claim: key, err: (err as Error).message },
            "claim not read from the leader",
          );
          return undefined;
        });
      if (msg) claims.set(key, claimOfStored(msg));
    },
    noteMember(member: string, groups: readonly string[]) {
      members.set(member, { seenAt: Date.now(), groups: [...groups] });
    },
    forgetMember(member: string) {
      members.delete(member);
    },
    claim: (key: string) => claims.get(key),
    /** The claims the bucket names `member` as owner of, by key. */
    ownedBy(member: string): [string, SeenClaim][] {
      return [...claims].filter(([, seen]) => seen.owner === member);
    },
    /**
     * When the first member other than `me` will count as gone unless it renews again (ms on the
     * process's clock), or undefined with none: a decision then takes a dead member's partitions
     * without waiting for the next renewal's.
     */
    firstGoneAt(me: string): number | undefined {
      let first: number | undefined;
      for (const [member, m] of members) {
        if (member !== me && (first === undefined || m.seenAt < first)) first = m.seenAt;
      }
      return first === undefined ? undefined : first + deps.goneAfterMs;
    },
    /** Members of `group` seen renewing within `goneAfterMs`, sorted; the others are dropped. */
    liveMembers(group: string): string[] {
      const cutoff = Date.now() - deps.goneAfterMs;
      for (const [member, m] of members) if (m.seenAt < cutoff) members.delete(member);
      return [...members]
        .filter(([, m]) => m.groups.includes(group))
        .map(([id]) => id)
        .sort();
    },
    /** The owner of each claimed partition of `group`. */
    owners(group: string): Map<number, string> {
      const owners = new Map<number, string>();
      const prefix = `${group}.p`;
      for (const [key, seen] of claims) {
        if (!key.startsWith(prefix) || seen.owner === undefined) continue;
        const p = Number(key.slice(prefix.length));
        if (Number.isInteger(p)) owners.set(p, seen.owner);
      }
      return owners;
    },
  };
}

export type ClaimsWatch = ReturnType<typeof createClaimsWatch>;

/** Opens (creating when missing) the claims bucket: no TTL, one value per key. */
export async function openClaimsBucket(
  nc: NatsConnection,
  options: { readonly replicas: number },
): Promise<KV> {
  return createBucket(new Kvm(nc), CLAIMS_BUCKET, {
    history: 1,
    replicas: options.replicas,
    storage: "file",
  });
}

/**
 * Whether a member's record is gone (expired or deleted), read from the lease stream's leader:
 * one read per owner for one decision, however many of its partitions are up for taking.
 */
export function memberGoneReader(jsm: JetStreamManager): (owner: string) => Promise<boolean> {
  const gone = new Map<string, Promise<boolean>>();
  return (owner) => {
    let answer = gone.get(owner);
    if (answer === undefined) {
      answer = jsm.streams
        .getMessage(`KV_${LEASE_BUCKET}`, {
          last_by_subj: `$KV.${LEASE_BUCKET}.${memberKey(owner)}`,
        })
        // A PUT carries no operation header; a delete or purge marker (DEL, PURGE) does.
        .then((m) => m === null || (m.header?.get("KV-Operation") ?? "") !== "");
      gone.set(owner, answer);
    }
    return answer;
  };
}

/**
 * Whether a rebuild holds a partition's lease key (`switchyard projector rebuild` holds
 * `projector`, or `projector.p<p>` at P > 1), read from the lease stream's leader: while it does,
 * the read model's replicas leave the partition to it. A read that gets no answer counts as held;
 * the next decision asks again.
 */
export function rebuildLeaseReader(deps: {
  readonly jsm: JetStreamManager;
  readonly key: ((group: string, partition: number) => string) | undefined;
  readonly logger: Logger;
}): (group: string, partition: number) => Promise<boolean> {
  return async (group, partition) => {
    if (deps.key === undefined) return false;
    const key = deps.key(group, partition);
    try {
      const m = await deps.jsm.streams.getMessage(`KV_${LEASE_BUCKET}`, {
        last_by_subj: `$KV.${LEASE_BUCKET}.${key}`,
      });
      // A PUT carries no operation header; a delete or purge marker (DEL, PURGE) does.
      return m !== null && (m.header?.get("KV-Operation") ?? "") === "";
    } catch (err) {
      deps.logger.info({ lease: key, err: (err as Error).message }, "rebuild lease not read");
      return true;
    }
  };
}
