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
  readonly maxDeliver?: number;
  readonly backoffMs?: readonly number[];
}

/** Creates a durable pull consumer on the events stream, or updates the mutable parts if it exists. */
export async function ensureDurable(jsm: JetStreamManager, options: DurableOptions): Promise<void> {
  const config: Partial<ConsumerConfig> & { durable_name: string } = {
    durable_name: options.name,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
    filter_subject: options.filterSubject,
    ack_wait: options.ackWaitMs * 1_000_000,
    max_ack_pending: options.maxAckPending,
    ...(options.maxDeliver === undefined ? {} : { max_deliver: options.maxDeliver }),
    ...(options.backoffMs === undefined
      ? {}
      : { backoff: options.backoffMs.map((ms) => ms * 1_000_000) }),
  };
  try {
    await jsm.consumers.info(TOPOLOGY.eventsStream, options.name);
    await jsm.consumers.update(TOPOLOGY.eventsStream, options.name, {
      ack_wait: config.ack_wait,
      max_ack_pending: config.max_ack_pending,
      ...(config.max_deliver === undefined ? {} : { max_deliver: config.max_deliver }),
      ...(config.backoff === undefined ? {} : { backoff: config.backoff }),
    });
  } catch (err) {
    if (!isJsError(err, "consumerNotFound")) throw err;
    try {
      await jsm.consumers.add(TOPOLOGY.eventsStream, config);
    } catch (addErr) {
      // Another replica created it first.
      if (!isJsError(addErr, "consumerExists", "consumerNameInUse")) throw addErr;
    }
  }
}
