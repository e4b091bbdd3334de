import type { JetStreamClient } from "@nats-io/jetstream";
import type { Clock } from "../clock/index.ts";
import { decideDiscardedResult, type StatusIntent } from "../domain/index.ts";
import type { IdGenerator } from "../ids/index.ts";
import { appendEvent } from "./append.ts";
import { newEvent } from "./envelope.ts";
import type { EventLayout } from "./layout.ts";
import type { CurrentStatus } from "./status.ts";
import type { JobRef } from "./subjects.ts";

/**
 * Keeps a result that arrived after the job was cancelled as history: job.result_discarded on the
 * job's `.ops` subject (issue 16: "kept in the stream, does not change the job"). Called only
 * when writeStatus was refused because the job is final; when the job did not end by a cancel
 * (a duplicate after a crash, a deadline after the result) the domain says there is nothing to
 * keep and nothing is read or written. The message id makes a writer's repeat of the same
 * refusal one event: the first result after a cancel is the one kept.
 */
export async function keepDiscardedResult(
  deps: {
    readonly js: JetStreamClient;
    readonly layout: EventLayout;
    readonly clock: Clock;
    readonly ids: IdGenerator;
  },
  input: { readonly ref: JobRef; readonly current: CurrentStatus; readonly intent: StatusIntent },
): Promise<void> {
  const data = decideDiscardedResult(input.current.last?.event, input.intent);
  if (data === null) return;
  const event = newEvent(deps, input.ref, { type: "job.result_discarded", data });
  await appendEvent(deps, event, {
    msgId: `discarded:${input.ref.job_id}:${input.current.seq}`,
  });
}
