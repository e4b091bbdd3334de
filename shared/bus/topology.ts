import {
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { keepsByteLimitExactly } from "../nats/index.ts";
import { createBucket } from "./buckets.ts";
import { checkPartitions, readStorePartitions, recordStorePartitions } from "./store-partitions.ts";
import { markStoreVersion, readStoreVersion, STORE_VERSION } from "./store-version.ts";
import { ensureStream, retryWhileSettingUp } from "./streams.ts";
import { TOPOLOGY } from "./topology-names.ts";

export { TOPOLOGY } from "./topology-names.ts";

export interface TopologyOptions {
  readonly replicas: number;
  readonly eventsMaxAgeMs: number;
  readonly duplicateWindowMs: number;
  /**
   * -1 for no limit. The stream holds it (new events refused, never old ones dropped) only on a
   * nats-server that keeps it exactly (keepsByteLimitExactly); on an older one the ingress alone
   * enforces it, for new runs (services/ingress/storage-guard.ts).
   */
  readonly eventsMaxBytes: number;
}

/** The names of the partitioned event log (shared/jobs/layout.ts's EventLayout provides them). */
export interface PartitionNames {
  readonly partitions: number;
  stream(p: number): string;
  eventRoot(p: number): string;
  auditRoot(p: number): string;
  viewBucket(p: number): string;
}

/**
 * The byte limit the events stream itself holds on this server: below 2.10.5 a stream at
 * max_bytes with discard new can drop its oldest events (keepsByteLimitExactly), so there the
 * stream holds none and the hub's own check is the limit.
 */
export function streamByteLimit(eventsMaxBytes: number, serverVersion: string): number {
  return keepsByteLimitExactly(serverVersion) ? eventsMaxBytes : -1;
}

const nanos = (ms: number) => ms * 1_000_000;

/** The events stream's config: file storage, deny delete and purge, discard new when full. */
export function eventsStreamConfig(
  options: TopologyOptions & { readonly names: PartitionNames; readonly partition: number },
): Partial<StreamConfig> & { name: string } {
  const { names, partition: p } = options;
  return {
    name: names.stream(p),
    subjects: [`${names.eventRoot(p)}.>`, `${names.auditRoot(p)}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    // Discard new: an audit log must refuse writes when full, never drop its oldest events.
    discard: DiscardPolicy.New,
    max_age: nanos(options.eventsMaxAgeMs),
    max_bytes: options.eventsMaxBytes,
    duplicate_window: nanos(Math.min(options.duplicateWindowMs, options.eventsMaxAgeMs)),
    num_replicas: options.replicas,
    deny_delete: true,
    deny_purge: true,
    allow_direct: true,
  };
}

/**
 * The store's partition count: a fresh store records the configured one, a store without a record
 * (written before partitions) is 1, and a configured count that differs is refused.
 */
async function storePartitions(meta: KV, fresh: boolean, configured: number): Promise<number> {
  const stored = await readStorePartitions(meta);
  if (stored !== undefined) return checkPartitions(configured, stored);
  if (!fresh) return checkPartitions(configured, 1);
  const recorded = await retryWhileSettingUp(() => recordStorePartitions(meta, configured));
  return checkPartitions(configured, recorded);
}

/**
 * Creates or updates every partition's events stream and view bucket, and the meta bucket. Safe
 * to run from every service at start, concurrently: creation races resolve to the same config.
 */
export async function ensureTopology<L extends PartitionNames>(
  nc: NatsConnection,
  jsm: JetStreamManager,
  options: TopologyOptions & {
    readonly partitions: number;
    readonly layoutOf: (partitions: number) => L;
    /** The client the buckets write through (default: nats.js's own on `nc`). */
    readonly js?: JetStreamClient;
  },
): Promise<{ layout: L; views: KV[]; meta: KV; storeVersion: number; created: boolean }> {
  const kvm = new Kvm(options.js ?? nc);
  // The meta bucket, the version mark and the partition count come before the streams, so a store
  // with a stream and no mark is one an older version wrote, never a new one half set up.
  // sy_meta holds the store mark, the job-id key and the console key (read at start-up) and each
  // operator's console-session generation (read per console request, so a logout on one replica
  // holds on all). Each read must see every earlier write: direct gets may be answered by an R3
  // follower that has not applied them yet (seen on 2.9.10 in a rolling restart), so its reads go
  // to the stream leader.
  const meta = await createBucket(kvm, TOPOLOGY.metaBucket, {
    history: 1,
    replicas: options.replicas,
    storage: "file",
    allow_direct: false,
  });
  const found = await readStoreVersion(jsm, meta);
  // The first writes of a process: sy_meta may still be being set up by another one's create.
  if (found === "fresh") await retryWhileSettingUp(() => markStoreVersion(meta));
  const layout = options.layoutOf(
    await storePartitions(meta, found === "fresh", options.partitions),
  );
  const maxBytes = streamByteLimit(options.eventsMaxBytes, nc.info?.version ?? "0.0.0");
  const views: KV[] = [];
  for (let p = 0; p < layout.partitions; p++) {
    await ensureStream(
      jsm,
      eventsStreamConfig({ ...options, eventsMaxBytes: maxBytes, names: layout, partition: p }),
    );
    views.push(
      await createBucket(kvm, layout.viewBucket(p), {
        history: 1,
        replicas: options.replicas,
        ttl: options.eventsMaxAgeMs,
        storage: "file",
      }),
    );
  }
  const created = found === "fresh";
  return { layout, views, meta, storeVersion: created ? STORE_VERSION : found, created };
}
