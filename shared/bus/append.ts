import type { JetStreamClient } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { type JobEvent, streamKindOf } from "../domain/index.ts";
import { EVENT_TYPE_HEADER, encodeEvent, TRACEPARENT_HEADER } from "./codec.ts";
import { isJsError } from "./js-errors.ts";
import { jobSubject } from "./subjects.ts";

export interface AppendOptions {
  /** Stream sequence the job's subject must end at; 0 means "no event on it yet". */
  readonly expectedLastSubjectSeq?: number;
  /** Nats-Msg-Id for the duplicate window; defaults to the event id. */
  readonly msgId?: string;
  readonly traceparent?: string;
  readonly timeoutMs?: number;
}

/** What an append did. Conflicts and duplicates are values, not exceptions. */
export type AppendResult =
  | { readonly kind: "appended"; readonly seq: number }
  | { readonly kind: "duplicate"; readonly seq: number }
  | { readonly kind: "conflict" };

/**
 * Appends one event to its job subject. With `expectedLastSubjectSeq` the server checks
 * atomically that nobody appended since the writer read the subject (optimistic concurrency).
 */
export async function appendEvent(
  js: JetStreamClient,
  event: JobEvent,
  options: AppendOptions = {},
): Promise<AppendResult> {
  const h = natsHeaders();
  h.set(EVENT_TYPE_HEADER, event.type);
  if (options.traceparent) h.set(TRACEPARENT_HEADER, options.traceparent);
  try {
    const ack = await js.publish(
      jobSubject(event.client_id, event.job_id, streamKindOf(event.type)),
      encodeEvent(event),
      {
        msgID: options.msgId ?? event.id,
        headers: h,
        ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
        ...(options.expectedLastSubjectSeq === undefined
          ? {}
          : { expect: { lastSubjectSequence: options.expectedLastSubjectSeq } }),
      },
    );
    return ack.duplicate ? { kind: "duplicate", seq: ack.seq } : { kind: "appended", seq: ack.seq };
  } catch (err) {
    if (isJsError(err, "wrongLastSequence")) {
      return { kind: "conflict" };
    }
    throw err;
  }
}
