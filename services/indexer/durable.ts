import type { JetStreamManager } from "@nats-io/jetstream";
import { isJsError } from "../../shared/bus/index.ts";

/** Durable name of the indexer's consumer on the events stream. */
export const INDEX_CONSUMER = "index";

/** Deletes the indexer's durable on one partition's stream; one that does not exist is fine. */
export async function deleteIndexConsumer(jsm: JetStreamManager, stream: string): Promise<void> {
  try {
    await jsm.consumers.delete(stream, INDEX_CONSUMER);
  } catch (err) {
    if (!isJsError(err, "consumerNotFound")) throw err;
  }
}
