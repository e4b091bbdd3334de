import { hostname } from "node:os";
import type { Config } from "../../shared/config/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import {
  createLease,
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
 * At P > 1 one {@link createPartitionClaims} per process: the read models it runs share its member
 * record, and replicas share the partitions fairly (docs/architecture.md, "Partition claims"). At
 * P = 1 each read model keeps its single lease (key `projector` / `indexer`), as before partitions.
 */
export async function openReadModelLeases(deps: {
  readonly hub: HubConnection;
  readonly config: Config;
  readonly groups: readonly ReadModelGroup[];
  readonly logger: Logger;
}): Promise<ReadModelLeases> {
  const { hub, config } = deps;
  const holder = `${hostname()}/${process.pid}`;
  const replicas = config.nats.replicas;
  const leases = await openLeaseBucket(hub.nc, { replicas });
  const P = hub.layout.partitions;
  if (P === 1) {
    const single = new Map<ReadModelGroup, Lease>();
    return {
      lease(group) {
        const lease = createLease({
          kv: leases,
          key: hub.layout.leaseKey(group, 0),
          holder,
          logger: deps.logger.child({ component: group }),
        });
        single.set(group, lease);
        return lease;
      },
      held: (group) => (single.get(group)?.holding() ? [0] : []),
      stop: async () => {},
    };
  }
  const claims = createPartitionClaims({
    leases,
    jsm: hub.jsm,
    claims: await openClaimsBucket(hub.nc, { replicas }),
    groups: Object.fromEntries(deps.groups.map((group) => [group, P])),
    holder,
    logger: deps.logger.child({ component: "claims" }),
  });
  return { lease: claims.lease, held: claims.held, stop: claims.stop };
}
