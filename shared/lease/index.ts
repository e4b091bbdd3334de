import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { createBucket } from "../bus/index.ts";
import type { Logger } from "../log/index.ts";

export { retryWhile } from "./retry.ts";

/** KV bucket of leases: every entry expires (max_age) unless its holder renews it. */
export const LEASE_BUCKET = "sy_leases";
/** A lease not renewed for this long is gone; the next candidate takes it. */
export const LEASE_TTL_MS = 3_000;
const RENEW_EVERY_MS = 1_000;
/**
 * How often a standby tries to take the lease. Expiry on 2.9 leaves no marker to watch for, so
 * a standby polls; often enough that takeover follows expiry closely (a failed create is one
 * cheap KV call), and only standbys do it.
 */
const CANDIDATE_EVERY_MS = 250;
/**
 * A process whose work could not start (lead() rejected: a JetStream request timed out, say)
 * releases the lease and sits out this long, so that a standby takes it first.
 */
export const SIT_OUT_AFTER_FAILED_LEAD_MS = 2_000;

export interface LeaseHandlers {
  /**
   * This process now holds the lease: start the work only one process may do. A rejection
   * releases the lease (after standDown, to undo what had started), and this process competes
   * again later: holding the lease with the work not running would stop it everywhere.
   */
  lead(): Promise<void>;
  /** It no longer holds it (lost, expired, or stopping): stop that work at once. */
  standDown(): Promise<void>;
}

export interface Lease {
  /** Competes for the lease until stopped; resolves after the first attempt. */
  start(handlers: LeaseHandlers): Promise<void>;
  /** True while this process holds the lease (the last renewal is younger than the margin). */
  holding(): boolean;
  /** Stops competing and releases the lease if held, so a standby takes over at once. */
  stop(): Promise<void>;
}

/**
 * The wait for a lease's next step, ending on a multiple of its period on the process's clock:
 * the leases of one process (a rebuild of every partition holds one per partition) renew in the
 * same event-loop turn, so their KV updates go out in one write.
 */
function untilNextStep(leading: boolean): number {
  const period = leading ? RENEW_EVERY_MS : CANDIDATE_EVERY_MS;
  return period - (Date.now() % period);
}

/** Opens (creating when missing) the lease bucket. */
export async function openLeaseBucket(
  nc: NatsConnection,
  options: { readonly replicas: number },
): Promise<KV> {
  return createBucket(new Kvm(nc), LEASE_BUCKET, {
    history: 1,
    replicas: options.replicas,
    ttl: LEASE_TTL_MS,
    storage: "file",
  });
}

/**
 * One holder at a time on a KV key: a read model's rebuild holds its partition's key
 * (shared/projection/rebuild-lease.ts; the read models' replicas hold partition claims, claims.ts,
 * and keep off a partition whose key is held). The holder renews the key every second with
 * compare-and-set on its revision; the bucket's max_age (3 s) removes a key whose holder died, and
 * a candidate's `create` then wins. Expiry is the server's clock, so no two processes need agree
 * on time. A holder that cannot renew for two thirds of the TTL stands down before anyone else can
 * take the lease. What the holder writes must still be fenced by its own compare-and-set (the
 * projector's KV writes are), since a paused holder may wake up late.
 */
export function createLease(deps: {
  readonly kv: KV;
  readonly key: string;
  /** Who holds it (host and pid), for operators reading the bucket. */
  readonly holder: string;
  readonly logger: Logger;
}): Lease {
  let revision = 0;
  let renewedAt = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let handlers: LeaseHandlers | undefined;
  let leading = false;
  let busy: Promise<void> = Promise.resolve();
  let competeAfter = 0;
  const value = () => JSON.stringify({ holder: deps.holder, renewed_at: new Date().toISOString() });
  const holding = () => leading && Date.now() - renewedAt < (LEASE_TTL_MS * 2) / 3;

  const lose = async (why: string) => {
    if (!leading) return;
    leading = false;
    revision = 0;
    deps.logger.warn({ lease: deps.key, why }, "lease lost; standing down");
    await handlers?.standDown();
  };

  const release = async () => {
    await deps.kv.delete(deps.key, { previousSeq: revision }).catch(() => undefined);
    revision = 0;
  };

  const leadFailed = async (why: string) => {
    deps.logger.error(
      { lease: deps.key, err: why, retry_ms: SIT_OUT_AFTER_FAILED_LEAD_MS },
      "could not start the lease's work; releasing the lease",
    );
    leading = false;
    competeAfter = Date.now() + SIT_OUT_AFTER_FAILED_LEAD_MS;
    await handlers?.standDown().catch((err: unknown) => {
      deps.logger.error({ lease: deps.key, err: (err as Error).message }, "stand-down failed");
    });
    await release();
  };

  const tick = async () => {
    if (leading) {
      try {
        revision = await deps.kv.update(deps.key, value(), revision);
        renewedAt = Date.now();
      } catch (err) {
        await lose((err as Error).message);
      }
      if (leading && !holding()) await lose("not renewed in time");
      return;
    }
    if (Date.now() < competeAfter) return;
    try {
      revision = await deps.kv.create(deps.key, value());
    } catch {
      return; // someone else holds it
    }
    renewedAt = Date.now();
    leading = true;
    deps.logger.info({ lease: deps.key, holder: deps.holder }, "lease acquired");
    try {
      await handlers?.lead();
    } catch (err) {
      await leadFailed((err as Error).message);
    }
  };

  const serialised = () => {
    busy = busy.then(tick).catch((err: unknown) => {
      deps.logger.error({ lease: deps.key, err: (err as Error).message }, "lease step failed");
    });
    return busy;
  };

  return {
    async start(h) {
      handlers = h;
      const next = () => {
        if (stopped) return;
        timer = setTimeout(() => void serialised().then(next), untilNextStep(leading));
      };
      await serialised();
      next();
    },
    holding,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await busy;
      if (!leading) return;
      leading = false;
      await handlers?.standDown();
      // Released at once: a standby takes over without waiting for the expiry.
      await release();
    },
  };
}

export { createPartitionClaims, type PartitionClaims } from "./claims.ts";
export {
  CLAIMS_BUCKET,
  type ClaimRecord,
  claimKey,
  claimOfStored,
  memberGoneReader,
  memberKey,
  openClaimsBucket,
} from "./claims-view.ts";
export { type ClaimAction, type ClaimsView, decideClaims } from "./partitions-decide.ts";
