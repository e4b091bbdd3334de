import { hostname } from "node:os";
import type { KV } from "@nats-io/kv";
import type { Config } from "../../shared/config/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import {
  createLease,
  createPartitionClaims,
  type HandOverLease,
  type Lease,
  leaseHolderColocated,
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
    const single = new Map<ReadModelGroup, HandOverLease>();
    const colocated = deps.groups.includes("projector") && deps.groups.includes("indexer");
    const affinity = colocated
      ? startLeaseAffinity({ kv: leases, single, key: hub.layout.leaseKey, logger: deps.logger })
      : undefined;
    return {
      lease(group) {
        const lease = createLease({
          kv: leases,
          key: hub.layout.leaseKey(group, 0),
          holder,
          logger: deps.logger.child({ component: group }),
          colocated,
        });
        single.set(group, lease);
        return lease;
      },
      held: (group) => (single.get(group)?.holding() ? [0] : []),
      stop: async () => affinity?.stop(),
    };
  }
  const claims = createPartitionClaims({
    leases,
    jsm: hub.jsm,
    claims: await openClaimsBucket(hub.nc, { replicas }),
    groups: Object.fromEntries(deps.groups.map((group) => [group, P])),
    // Both read models here: the index's partitions follow the view's (one delivery for both).
    ...(deps.groups.includes("projector") && deps.groups.includes("indexer")
      ? { follows: { indexer: "projector" } }
      : {}),
    holder,
    logger: deps.logger.child({ component: "claims" }),
  });
  return { lease: claims.lease, held: claims.held, stop: claims.stop };
}

/** How often a process running both read models looks whether their leases are split. */
const AFFINITY_EVERY_MS = 5_000;
/** The indexer's lease, handed over, is left to the other process this long. */
const HAND_OVER_SIT_OUT_MS = 30_000;

/**
 * One delivery for both read models needs both leases in one process. With two replicas that run
 * both, a start or a takeover can split them (each lease is taken on its own). The index follows
 * the view: a process holding the indexer's lease but not the projector's, whose holder runs both
 * (its lease record says so), hands the indexer's lease over; that holder, a standby for it,
 * takes it within a candidate poll and feeds its index from the projector's deliveries. A
 * projector holder that runs no indexer is left alone (nothing would take the lease).
 */
function startLeaseAffinity(deps: {
  readonly kv: KV;
  readonly single: ReadonlyMap<ReadModelGroup, HandOverLease>;
  readonly key: (group: ReadModelGroup, partition: number) => string;
  readonly logger: Logger;
}) {
  const look = async () => {
    const indexer = deps.single.get("indexer");
    const projector = deps.single.get("projector");
    if (!indexer?.holding() || projector === undefined || projector.holding()) return;
    if ((await leaseHolderColocated(deps.kv, deps.key("projector", 0))) !== true) return;
    deps.logger.info(
      { component: "indexer", sit_out_ms: HAND_OVER_SIT_OUT_MS },
      "the projector's lease is held by a process that runs the indexer too; handing the indexer's lease to it",
    );
    await indexer.handOver(HAND_OVER_SIT_OUT_MS);
  };
  const timer = setInterval(() => {
    look().catch((err: unknown) =>
      deps.logger.debug({ err: (err as Error).message }, "lease affinity check failed"),
    );
  }, AFFINITY_EVERY_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
