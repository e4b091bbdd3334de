/**
 * A read model's lease, held by its rebuild (`switchyard projector rebuild`, `switchyard index
 * rebuild`) from start to end: the read model's replicas compete for the same key
 * (services/runtime/read-model-leases.ts), so while the rebuild holds it they stay on standby
 * instead of writing what the rebuild is replaying, and an active one keeps the rebuild out.
 */

import { hostname } from "node:os";
import type { JetStreamManager } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { EventLayout } from "../jobs/index.ts";
import {
  CLAIMS_BUCKET,
  type ClaimRecord,
  claimKey,
  createLease,
  type Lease,
  type LeaseHandlers,
  memberKey,
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
 * At P > 1 read-model replicas hold partition claims (sy_claims), not the lease key: the holder
 * of the group's claim on the partition while its member record lives, or undefined.
 */
async function claimHolderOf(deps: {
  readonly nc: NatsConnection;
  readonly leases: KV;
  readonly group: RebuildGroup;
  readonly partition: number;
}): Promise<string | undefined> {
  const claims = await new Kvm(deps.nc).open(CLAIMS_BUCKET).catch(() => undefined);
  const entry = await claims?.get(claimKey(deps.group, deps.partition)).catch(() => null);
  if (entry?.operation !== "PUT") return undefined;
  const claim = entry.json<ClaimRecord>();
  if (claim.owner === "") return undefined;
  const member = await deps.leases.get(memberKey(claim.owner)).catch(() => null);
  return member?.operation === "PUT" ? claim.holder : undefined;
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
  const claimHolder =
    deps.layout.partitions > 1
      ? await claimHolderOf({ nc: deps.nc, leases: kv, group, partition })
      : undefined;
  if (claimHolder !== undefined) {
    await lease.stop();
    throw new ReadModelRunningError(group, `partition ${partition} is claimed by ${claimHolder}`);
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
