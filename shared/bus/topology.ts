import {
  DiscardPolicy,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "@nats-io/jetstream";
import { type KV, Kvm } from "@nats-io/kv";
import type { NatsConnection } from "@nats-io/transport-node";
import { keepsByteLimitExactly } from "../nats/index.ts";
import { markStoreVersion, readStoreVersion, STORE_VERSION } from "./store-version.ts";
import { ensureStream } from "./streams.ts";
import { AUDIT_SUBJECT_ROOT, EVENT_SUBJECT_ROOT } from "./subjects.ts";
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
  options: TopologyOptions,
): Partial<StreamConfig> & { name: string } {
  return {
    name: TOPOLOGY.eventsStream,
    subjects: [`${EVENT_SUBJECT_ROOT}.>`, `${AUDIT_SUBJECT_ROOT}.>`],
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
 * Creates or updates the events stream and the KV buckets. Safe to run from every service at
 * start, concurrently: creation races resolve to the same config.
 */
export async function ensureTopology(
  nc: NatsConnection,
  jsm: JetStreamManager,
  options: TopologyOptions,
): Promise<{ jobs: KV; meta: KV; storeVersion: number }> {
  const kvm = new Kvm(nc);
  // The meta bucket and the version mark come before the stream, so a store with a stream and
  // no mark is one an older version wrote, never a new one half set up.
  // sy_meta holds the store mark, the job-id key and the console key (read at start-up) and each
  // operator's console-session generation (read per console request, so a logout on one replica
  // holds on all). Each read must see every earlier write: direct gets may be answered by an R3
  // follower that has not applied them yet (seen on 2.9.10 in a rolling restart), so its reads go
  // to the stream leader.
  const meta = await kvm.create(TOPOLOGY.metaBucket, {
    history: 1,
    replicas: options.replicas,
    storage: "file",
    allow_direct: false,
  });
  const found = await readStoreVersion(jsm, meta);
  if (found === "fresh") await markStoreVersion(meta);
  const maxBytes = streamByteLimit(options.eventsMaxBytes, nc.info?.version ?? "0.0.0");
  await ensureStream(jsm, eventsStreamConfig({ ...options, eventsMaxBytes: maxBytes }));
  const jobs = await kvm.create(TOPOLOGY.jobsBucket, {
    history: 1,
    replicas: options.replicas,
    ttl: options.eventsMaxAgeMs,
    storage: "file",
  });
  return { jobs, meta, storeVersion: found === "fresh" ? STORE_VERSION : found };
}
