import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import {
  decideReplay,
  type EventData,
  evolve,
  type JobView,
  type RunRequested,
} from "../domain/index.ts";
import {
  appendEvent,
  type EnvelopeDeps,
  type EventLayout,
  type JobRef,
  newEvent,
  readLastEvent,
} from "../jobs/index.ts";

export interface AcceptRunDeps extends EnvelopeDeps {
  readonly js: JetStreamClient;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
  readonly jsm: JetStreamManager;
}

/** A run to accept: the job it becomes and the run.requested data. */
export interface RunCommand {
  readonly ref: JobRef;
  readonly data: EventData<"run.requested">;
  readonly traceparent?: string;
  /** The append's publish timeout (default: the JetStream client's). */
  readonly timeoutMs?: number;
}

export type AcceptOutcome =
  /** run.requested was appended: a new job (202). */
  | { readonly kind: "created"; readonly job: JobView; readonly seq: number }
  /** The same request was accepted before (200): the job's run as stored. */
  | { readonly kind: "replayed"; readonly run: RunRequested }
  /** The request_id was used with another body (409). */
  | { readonly kind: "conflict"; readonly request_id: string }
  /** The append says the job exists, but its run could not be read (503, retry). */
  | { readonly kind: "unread" };

/**
 * Accepts a run with one JetStream publish: run.requested on the job's `.run` subject with
 * Nats-Msg-Id = job id (cheap duplicate answers inside the window) and expected last subject
 * sequence 0 (the guard that does not expire). When the job id is taken, the stored run is read
 * and the domain decides replay or conflict (decideReplay). POST /run and an operator's retry
 * both accept runs here.
 */
export async function acceptRun(deps: AcceptRunDeps, command: RunCommand): Promise<AcceptOutcome> {
  const event = newEvent(deps, command.ref, { type: "run.requested", data: command.data });
  const result = await appendEvent(deps, event, {
    msgId: command.ref.job_id,
    expectedLastSubjectSeq: 0,
    ...(command.timeoutMs === undefined ? {} : { timeoutMs: command.timeoutMs }),
    ...(command.traceparent === undefined ? {} : { traceparent: command.traceparent }),
  });
  if (result.kind === "appended") {
    return { kind: "created", job: evolve(null, event) as JobView, seq: result.seq };
  }
  const stored = await readLastEvent(deps, command.ref, "run");
  if (stored === null) return { kind: "unread" };
  // `.run` holds only run.requested (streamKindOf); anything else there is not this request.
  if (stored.event.type !== "run.requested") return { kind: "conflict", request_id: "" };
  const decision = decideReplay(stored.event.data, command.data.fingerprint);
  return decision.kind === "conflict" ? decision : { kind: "replayed", run: stored.event };
}
