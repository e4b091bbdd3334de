/**
 * The projector's lease, held by `switchyard projector rebuild` from start to end: projector
 * replicas compete for the same key (services/runtime/run.ts), so while the rebuild holds it they
 * stay on standby instead of recreating the durable the rebuild is replaying, and an active one
 * keeps the rebuild out.
 */

import { hostname } from "node:os";
import type { JetStreamManager } from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import type { EventLayout } from "../../shared/jobs/index.ts";
import {
  CLAIMS_BUCKET,
  type ClaimRecord,
  claimKey,
  createLease,
  type Lease,
  type LeaseHandlers,
  memberKey,
  openLeaseBucket,
} from "../../shared/lease/index.ts";
import type { Logger } from "../../shared/log/index.ts";

/** The key projector replicas hold in the lease bucket (the same as services/runtime/run.ts). */
export const PROJECTOR_LEASE_KEY = "projector";

/** A projector service is consuming the durable: a rebuild now would break it. */
export class ProjectorRunningError extends Error {
  readonly code = "projector_running";
  constructor(readonly detail: string) {
    super(
      `a projector is running (${detail}). Rebuilding under it would delete its durable and purge views it is writing. Stop the projector service (or the hub) first, then run the rebuild.`,
    );
    this.name = "ProjectorRunningError";
  }
}

/** The rebuild lost the lease half way: a projector may fold again, on views not yet rebuilt. */
export class RebuildInterruptedError extends Error {
  readonly code = "rebuild_interrupted";
  constructor(why: string) {
    super(
      `the rebuild lost the projector lease (${why}), so a projector replica may have taken over. Some views may not be rebuilt yet: run the rebuild again.`,
    );
    this.name = "RebuildInterruptedError";
  }
}

export interface RebuildLease {
  /** Throws {@link RebuildInterruptedError} once the lease is lost. */
  check(): void;
  /**
   * The lease as the rebuild's own projector sees it: it folds at once and stops writing the
   * moment the real lease is lost, as a replica that lost its lease does.
   */
  readonly fence: Lease;
  /** Releases the lease at once: a standby replica takes over from the rebuilt durable. */
  release(): Promise<void>;
}

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
 * At P > 1 projector replicas hold partition claims (sy_claims), not the lease key: the holder of
 * the partition's claim while its member record lives, or undefined.
 */
async function claimHolderOf(deps: {
  readonly nc: NatsConnection;
  readonly leases: KV;
  readonly partition: number;
}): Promise<string | undefined> {
  const claims = await new Kvm(deps.nc).open(CLAIMS_BUCKET).catch(() => undefined);
  const entry = await claims?.get(claimKey(PROJECTOR_LEASE_KEY, deps.partition)).catch(() => null);
  if (entry?.operation !== "PUT") return undefined;
  const claim = entry.json<ClaimRecord>();
  if (claim.owner === "") return undefined;
  const member = await deps.leases.get(memberKey(claim.owner)).catch(() => null);
  return member?.operation === "PUT" ? claim.holder : undefined;
}

/**
 * Takes the projector's lease, or refuses with {@link ProjectorRunningError} naming its holder.
 * The bucket is opened with the events stream's replicas: the CLI has no config file, and a hub
 * whose projector never ran has no bucket yet (the projector's own open then finds this one).
 */
export async function takeProjectorLease(deps: {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  /** The partition whose projector lease is taken (default 0). */
  readonly partition?: number;
  readonly logger: Logger;
}): Promise<RebuildLease> {
  const partition = deps.partition ?? 0;
  const key = deps.layout.leaseKey(PROJECTOR_LEASE_KEY, partition);
  const events = await deps.jsm.streams.info(deps.layout.stream(partition));
  const kv = await openLeaseBucket(deps.nc, { replicas: events.config.num_replicas });
  let lost: string | undefined;
  let releasing = false;
  let fenced: LeaseHandlers | undefined;
  const lease = createLease({
    kv,
    key,
    holder: `${hostname()}/${process.pid} (projector rebuild)`,
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
    throw new ProjectorRunningError(`the projector lease is held by ${await holderOf(kv, key)}`);
  }
  const claimHolder =
    deps.layout.partitions > 1
      ? await claimHolderOf({ nc: deps.nc, leases: kv, partition })
      : undefined;
  if (claimHolder !== undefined) {
    await lease.stop();
    throw new ProjectorRunningError(`partition ${partition} is claimed by ${claimHolder}`);
  }
  const held = () => lost === undefined && lease.holding();
  return {
    check() {
      if (!held()) throw new RebuildInterruptedError(lost ?? "it was not renewed in time");
    },
    fence: {
      async start(handlers) {
        fenced = handlers;
        await handlers.lead();
      },
      holding: held,
      async stop() {}, // the rebuild releases the real lease itself, after its projector stopped
    },
    async release() {
      releasing = true;
      await lease.stop();
    },
  };
}
