import { DeliverPolicy, type JetStreamClient } from "@nats-io/jetstream";
import { TOPOLOGY } from "./topology.ts";

/** One stored message of the events stream, as read back. */
export interface StreamRecord {
  readonly seq: number;
  readonly subject: string;
  /** Server receive time (RFC 3339). */
  readonly time: string;
  readonly data: Uint8Array;
  readonly headers: Readonly<Record<string, string>>;
}

export interface ReadStreamOptions {
  /** The stream to read; default: the single-partition events stream. */
  readonly stream?: string;
  /** One subject filter (nats-server 2.9 takes one); default: every subject. */
  readonly filterSubject?: string;
  /** First stream sequence to read (resume an export with last seq + 1). */
  readonly fromSeq?: number;
  /** Start at the first message at or after this time (when fromSeq is not given). */
  readonly since?: Date;
  /** Keep waiting for new messages instead of stopping at the head. */
  readonly follow?: boolean;
  readonly signal?: AbortSignal;
}

/**
 * Reads the events stream in order with an ordered consumer, from a sequence or a time, to the
 * head (or forever with follow). Used by `switchyard events`, `audit verify` and the checkpointer.
 */
export async function* readStream(
  js: JetStreamClient,
  options: ReadStreamOptions = {},
): AsyncGenerator<StreamRecord> {
  const consumer = await js.consumers.get(options.stream ?? TOPOLOGY.eventsStream, {
    ...(options.filterSubject ? { filter_subjects: options.filterSubject } : {}),
    ...(options.fromSeq !== undefined
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: Math.max(1, options.fromSeq) }
      : options.since
        ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: options.since.toISOString() }
        : { deliver_policy: DeliverPolicy.All }),
  });
  const info = await consumer.info(true);
  if (info.num_pending === 0 && !options.follow) return;
  const messages = await consumer.consume({ max_messages: 512 });
  const stop = () => void messages.close();
  options.signal?.addEventListener("abort", stop);
  try {
    for await (const msg of messages) {
      const headers: Record<string, string> = {};
      for (const [key, values] of msg.headers ?? []) headers[key] = values[0] ?? "";
      yield {
        seq: msg.seq,
        subject: msg.subject,
        time: msg.time.toISOString(),
        data: msg.data,
        headers,
      };
      if (!options.follow && msg.info.pending === 0) break;
    }
  } finally {
    options.signal?.removeEventListener("abort", stop);
    await messages.close();
  }
}
