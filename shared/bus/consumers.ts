import {
  AckPolicy,
  type ConsumerConfig,
  DeliverPolicy,
  type JetStreamManager,
} from "@nats-io/jetstream";
import { isJsError } from "./js-errors.ts";
import { TOPOLOGY } from "./topology.ts";

export interface DurableOptions {
  readonly name: string;
  readonly filterSubject: string;
  readonly ackWaitMs: number;
  readonly maxAckPending: number;
  /** Default: the events stream. */
  readonly stream?: string;
  readonly maxDeliver?: number;
  readonly backoffMs?: readonly number[];
  /** Explicit (default) or All: one ack settles every earlier delivery (the projector's rounds). */
  readonly ackPolicy?: "explicit" | "all";
}

function differs(current: ConsumerConfig, wanted: Partial<ConsumerConfig>): boolean {
  return Object.entries(wanted).some(
    ([key, value]) =>
      JSON.stringify(current[key as keyof ConsumerConfig] ?? null) !== JSON.stringify(value),
  );
}

/**
 * Creates a durable pull consumer, or updates the mutable parts if it exists. The ack policy and
 * filter cannot change on an existing consumer; `switchyard migrate` recreates those that must.
 */
export async function ensureDurable(jsm: JetStreamManager, options: DurableOptions): Promise<void> {
  const stream = options.stream ?? TOPOLOGY.eventsStream;
  const mutable = {
    ack_wait: options.ackWaitMs * 1_000_000,
    max_ack_pending: options.maxAckPending,
    ...(options.maxDeliver === undefined ? {} : { max_deliver: options.maxDeliver }),
    ...(options.backoffMs === undefined
      ? {}
      : { backoff: options.backoffMs.map((ms) => ms * 1_000_000) }),
  };
  const config: Partial<ConsumerConfig> & { durable_name: string } = {
    durable_name: options.name,
    ack_policy: options.ackPolicy === "all" ? AckPolicy.All : AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: options.filterSubject,
    ...mutable,
  };
  try {
    const info = await jsm.consumers.info(stream, options.name);
    // Unchanged settings are not written: a service without consumer-management rights (NATS
    // permissions, docs/security.md) then starts against the consumers `switchyard setup` made.
    if (!differs(info.config, mutable)) return;
    await jsm.consumers.update(stream, options.name, mutable);
  } catch (err) {
    if (!isJsError(err, "consumerNotFound")) throw err;
    try {
      await jsm.consumers.add(stream, config);
    } catch (addErr) {
      // Another replica created it first.
      if (!isJsError(addErr, "consumerExists", "consumerNameInUse")) throw addErr;
    }
  }
}

/**
 * Where a durable taken again from its floor starts: its acknowledged floor + 1 (1 when it does
 * not exist). Recreated there (recreateDurableAt), it delivers in stream order everything after
 * that floor: what a previous process held un-acked comes first, as ordinary deliveries, instead
 * of being redelivered after its ack wait behind newer messages. With AckPolicy.All this is what
 * makes one ack per round safe across a crash (an ack of a newer message would otherwise settle
 * the older ones still waiting for redelivery). Only for a durable a single process owns.
 */
export async function durableStart(
  jsm: JetStreamManager,
  options: DurableOptions,
): Promise<number> {
  const stream = options.stream ?? TOPOLOGY.eventsStream;
  try {
    const info = await jsm.consumers.info(stream, options.name);
    // A consumer that has acked nothing reports an ack floor of 0 even when it was created at a
    // later start sequence (the previous recreation): it then still starts there.
    return info.ack_floor.stream_seq > 0
      ? info.ack_floor.stream_seq + 1
      : (info.config.opt_start_seq ?? 1);
  } catch (err) {
    if (!isJsError(err, "consumerNotFound")) throw err;
    return 1;
  }
}

/**
 * Deletes a durable (one that does not exist is fine) and creates it again delivering from
 * `fromSeq`: for an owner that keeps its own position (the search index keeps it in its store).
 */
export async function recreateDurableAt(
  jsm: JetStreamManager,
  options: DurableOptions & { readonly fromSeq: number },
): Promise<void> {
  const stream = options.stream ?? TOPOLOGY.eventsStream;
  try {
    await jsm.consumers.delete(stream, options.name);
  } catch (err) {
    if (!isJsError(err, "consumerNotFound")) throw err;
  }
  const { fromSeq } = options;
  await jsm.consumers.add(stream, {
    durable_name: options.name,
    ack_policy: options.ackPolicy === "all" ? AckPolicy.All : AckPolicy.Explicit,
    ...(fromSeq > 1
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq }
      : { deliver_policy: DeliverPolicy.All }),
    filter_subject: options.filterSubject,
    ack_wait: options.ackWaitMs * 1_000_000,
    max_ack_pending: options.maxAckPending,
  });
}
