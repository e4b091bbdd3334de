import { hostname } from "node:os";
import type { Config } from "../../shared/config/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import {
  createPartitionClaims,
  type Lease,
  openClaimsBucket,
  openLeaseBucket,
} from "../../shared/lease/index.ts";
import type { Logger } from "../../shared/log/index.ts";

/** The read models whose partitions are shared among replicas (their claim groups). */
export type ReadModelGroup = "projector" | "indexer";

/** Where each read model's per-partition slot gets its lease, one per process. */
export interface ReadModelLeases {
  lease(group: ReadModelGroup, partition: number): Lease;
  /** The partitions of `group` this process holds now. */
  held(group: ReadModelGroup): number[];
  /** Releases whatever is still held (each slot's stop already released its own). */
  stop(): Promise<void>;
}

/**
 * One {@link createPartitionClaims} per process, at every P: the read models it runs share its
 * member record (one renewal a second for both), and replicas share the partitions fairly
 * (docs/architecture.md, "Partition claims"). A partition whose rebuild lease is held
 * (`switchyard projector rebuild`, `switchyard index rebuild`) is left to the rebuild.
 */
export async function openReadModelLeases(deps: {
  readonly hub: HubConnection;
  readonly config: Config;
  readonly groups: readonly ReadModelGroup[];
  readonly logger: Logger;
}): Promise<ReadModelLeases> {
  const { hub, config } = deps;
  const replicas = config.nats.replicas;
  const P = hub.layout.partitions;
  const claims = createPartitionClaims({
    leases: await openLeaseBucket(hub.nc, { replicas }),
    jsm: hub.jsm,
    claims: await openClaimsBucket(hub.nc, { replicas }),
    groups: Object.fromEntries(deps.groups.map((group) => [group, P])),
    // Both read models here: the index's partitions follow the view's (one delivery for both).
    ...(deps.groups.includes("projector") && deps.groups.includes("indexer")
      ? { follows: { indexer: "projector" } }
      : {}),
    rebuildKey: (group, partition) => hub.layout.leaseKey(group, partition),
    holder: `${hostname()}/${process.pid}`,
    logger: deps.logger.child({ component: "claims" }),
  });
  return { lease: claims.lease, held: claims.held, stop: claims.stop };
}
