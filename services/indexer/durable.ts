import { AckPolicy, DeliverPolicy, type JetStreamManager } from "@nats-io/jetstream";
import { isJsError, TOPOLOGY } from "../../shared/bus/index.ts";
import { subjectFilters } from "../../shared/jobs/index.ts";

/** Durable name of the indexer's consumer on the events stream. */
export const INDEX_CONSUMER = "index";

/** Deletes the indexer's durable; one that does not exist is fine. */
export async function deleteIndexConsumer(jsm: JetStreamManager): Promise<void> {
  try {
    await jsm.consumers.delete(TOPOLOGY.eventsStream, INDEX_CONSUMER);
  } catch (err) {
    if (!isJsError(err, "consumerNotFound")) throw err;
  }
}

/**
 * Recreates the durable at the index's own position (the index says what it has, not the
 * consumer): AckPolicy.All, every job event, from `fromSeq`.
 */
export async function recreateIndexConsumer(jsm: JetStreamManager, fromSeq: number): Promise<void> {
  await deleteIndexConsumer(jsm);
  await jsm.consumers.add(TOPOLOGY.eventsStream, {
    durable_name: INDEX_CONSUMER,
    ack_policy: AckPolicy.All,
    ...(fromSeq > 1
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: fromSeq }
      : { deliver_policy: DeliverPolicy.All }),
    filter_subject: subjectFilters.all,
    ack_wait: 30_000 * 1_000_000,
    max_ack_pending: 20_000,
  });
}
