/**
 * A read model's lease on one partition, held by its rebuild (`switchyard projector rebuild`,
 * `switchyard index rebuild`) from start to end. The read model's replicas hold partition claims
 * (shared/lease/claims.ts) and claim no partition whose rebuild lease is held, so they stay on
 * standby instead of writing what the rebuild is replaying; a live claim keeps the rebuild out.
 */

import { hostname } from "node:os";
import type { JetStreamManager } from "@nats-io/jetstream";
import type { KV } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { isJsError } from "../bus/index.ts";
import type { EventLayout } from "../jobs/index.ts";
import {
  CLAIMS_BUCKET,
  type ClaimRecord,
  claimKey,
  claimOfStored,
  createLease,
  type Lease,
  type LeaseHandlers,
  memberGoneReader,
  openLeaseBucket,
} from "../lease/index.ts";
import type { Logger } from "../log/index.ts";

/** A read model with a rebuild; also its lease's key and its claims' group. */
export type RebuildGroup = "projector" | "indexer";

/** What each read model's rebuild would break under a running replica, for the refusal. */
const RUNNING = {
  projector: {
    what: "a projector",
    breaks: "delete its durable and purge views it is writing",
    stop: "Stop the projector service (or the hub)",
    writes: "views",
  },
  indexer: {
    what: "an indexer",
    breaks: "delete its durable and empty the index it is writing",
    stop: "Stop the indexer service (the read-models Deployment, or the hub)",
    writes: "index rows",
  },
} as const;

/** A replica of the read model is running: a rebuild now would break it. */
export class ReadModelRunningError extends Error {
  readonly code: "projector_running" | "indexer_running";
  constructor(
    readonly group: RebuildGroup,
    readonly detail: string,
    /** The holder is another rebuild of the same read model, not a replica. */
    readonly rebuilding = false,
  ) {
    const running = RUNNING[group];
    super(
      `${running.what} is running (${detail}). Rebuilding under it would ${running.breaks}. ${running.stop} first, then run the rebuild.`,
    );
    this.code = `${group}_running`;
    this.name = "ReadModelRunningError";
  }
}

/** The rebuild lost the lease half way: a replica may write again, on what is not rebuilt yet. */
export class RebuildInterruptedError extends Error {
  readonly code = "rebuild_interrupted";
  constructor(group: RebuildGroup, why: string) {
    super(
      `the rebuild lost the ${group} lease (${why}), so a ${group} replica may have taken over. Some ${RUNNING[group].writes} may not be rebuilt yet: run the rebuild again.`,
    );
    this.name = "RebuildInterruptedError";
  }
}

export interface RebuildLease {
  /** Throws {@link RebuildInterruptedError} once the lease is lost. */
  check(): void;
  /**
   * The lease as the rebuild's own read model sees it: it folds at once and stops writing the
   * moment the real lease is lost, as a replica that lost its lease does.
   */
  readonly fence: Lease;
  /** Releases the lease at once: a standby replica takes over from the rebuilt durable. */
  release(): Promise<void>;
}

/** How a rebuild's lease record ends its holder, e.g. `host/42 (indexer rebuild)`. */
const rebuildMark = (group: RebuildGroup) => ` (${group} rebuild)`;

async function holderOf(kv: KV, key: string): Promise<string> {
  const entry = await kv.get(key).catch(() => null);
  if (entry?.operation !== "PUT") return "another process";
  try {
    const value = entry.json<{ holder?: unknown }>();
    return typeof value.holder === "string" ? value.holder : "another process";
  } catch {
    return "another process";
  }
}

/**
 * The holder of the group's claim on the partition while its owner's member record lives, or
 * undefined. Read from each stream's leader, after the rebuild took its lease: a replica reads
 * that lease after it claims (shared/lease/claims.ts), so one of the two sees the other, and a
 * replica that lags (a direct get any node answers) could miss a claim just taken.
 */
async function claimHolderOf(deps: {
  readonly jsm: JetStreamManager;
  readonly group: RebuildGroup;
  readonly partition: number;
}): Promise<string | undefined> {
  const key = claimKey(deps.group, deps.partition);
  const stored = await deps.jsm.streams
    .getMessage(`KV_${CLAIMS_BUCKET}`, { last_by_subj: `$KV.${CLAIMS_BUCKET}.${key}` })
    .catch((err: unknown) => {
      // A hub whose read models never ran has no claims bucket: nobody holds anything.
      if (isJsError(err, "streamNotFound")) return null;
      throw err;
    });
  if (stored === null) return undefined;
  const claim = claimOfStored(stored);
  if (claim.owner === undefined) return undefined;
  const gone = await memberGoneReader(deps.jsm)(claim.owner);
  return gone ? undefined : stored.json<ClaimRecord>().holder;
}

/**
 * Takes the read model's lease on one partition, or refuses with {@link ReadModelRunningError}
 * naming its holder. The bucket is opened with the events stream's replicas: the CLI may have no
 * config file, and a hub whose read models never ran has no bucket yet (their own open then finds
 * this one).
 */
export async function takeRebuildLease(deps: {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  readonly group: RebuildGroup;
  /** The partition whose lease is taken (default 0). */
  readonly partition?: number;
  readonly logger: Logger;
}): Promise<RebuildLease> {
  const { group } = deps;
  const partition = deps.partition ?? 0;
  const key = deps.layout.leaseKey(group, partition);
  const events = await deps.jsm.streams.info(deps.layout.stream(partition));
  const kv = await openLeaseBucket(deps.nc, { replicas: events.config.num_replicas });
  let lost: string | undefined;
  let releasing = false;
  let fenced: LeaseHandlers | undefined;
  const lease = createLease({
    kv,
    key,
    holder: `${hostname()}/${process.pid}${rebuildMark(group)}`,
    logger: deps.logger,
  });
  await lease.start({
    lead: async () => {},
    standDown: async () => {
      if (releasing) return;
      lost ??= "it was not renewed in time";
      await fenced?.standDown();
    },
  });
  if (!lease.holding()) {
    await lease.stop(); // one attempt only: a rebuild does not wait in line
    const holder = await holderOf(kv, key);
    throw new ReadModelRunningError(
      group,
      `the ${group} lease is held by ${holder}`,
      holder.endsWith(rebuildMark(group)),
    );
  }
  const claimHolder = await claimHolderOf({ jsm: deps.jsm, group, partition }).catch(
    async (err: unknown) => {
      await lease.stop();
      throw err;
    },
  );
  if (claimHolder !== undefined) {
    await lease.stop();
    const detail =
      deps.layout.partitions === 1
        ? `the ${group} claim is held by ${claimHolder}`
        : `partition ${partition} is claimed by ${claimHolder}`;
    throw new ReadModelRunningError(group, detail);
  }
  const held = () => lost === undefined && lease.holding();
  return {
    check() {
      if (!held()) throw new RebuildInterruptedError(group, lost ?? "it was not renewed in time");
    },
    fence: {
      async start(handlers) {
        fenced = handlers;
        await handlers.lead();
      },
      holding: held,
      async stop() {}, // the rebuild releases the real lease itself, after its read model stopped
    },
    async release() {
      releasing = true;
      await lease.stop();
    },
  };
}
