import {
  DiscardPolicy,
  type JetStreamClient,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { type Static, Type } from "@sinclair/typebox";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { ensureStream } from "../bus/index.ts";

/*
 * Telling executors that a job was cancelled (docs/executors.md, "Cancel"). The cancel itself is
 * already final in the stream (job.error `cancelled`); this is best effort and costs nothing on
 * the common path:
 * - a core NATS publish on `sy.cancel.<client>.<job>`, which executor processes (in-flight HTTP
 *   attempts, builtins) and NATS workers (the handler's AbortSignal) listen to;
 * - for HTTP executors with a `cancel_url`, one entry in the SWITCHYARD_CANCELS work queue, from
 *   which an executor process sends the signed cancel request once.
 */

export const CANCEL_SUBJECT_ROOT = "sy.cancel";
export const CANCEL_QUEUE_STREAM = "SWITCHYARD_CANCELS";
export const CANCEL_QUEUE_SUBJECT_ROOT = "sy.cancelq";
export const CANCEL_QUEUE_CONSUMER = "executor-cancels";

export const CancelNoticeSchema = Type.Object(
  {
    client_id: Type.String(),
    job_id: Type.String(),
    route: Type.String(),
    /** When the job was cancelled (the cancel event's time). */
    cancelled_at: Type.String(),
  },
  { additionalProperties: false },
);
export type CancelNotice = Static<typeof CancelNoticeSchema>;

const checker = TypeCompiler.Compile(CancelNoticeSchema);
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function cancelSubject(clientId: string, jobId: string): string {
  return `${CANCEL_SUBJECT_ROOT}.${clientId}.${jobId}`;
}

/** Parses a notice; undefined when the bytes are not one. */
export function decodeCancelNotice(bytes: Uint8Array): CancelNotice | undefined {
  try {
    const value: unknown = JSON.parse(decoder.decode(bytes));
    return checker.Check(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Creates (or updates) the work queue of HTTP cancel requests. */
export async function ensureCancelQueue(
  jsm: JetStreamManager,
  options: { readonly replicas: number },
): Promise<void> {
  await ensureStream(jsm, {
    name: CANCEL_QUEUE_STREAM,
    subjects: [`${CANCEL_QUEUE_SUBJECT_ROOT}.*.*`],
    storage: StorageType.File,
    retention: RetentionPolicy.Workqueue,
    discard: DiscardPolicy.New,
    num_replicas: options.replicas,
    max_msgs_per_subject: 1,
    duplicate_window: 2 * 60_000 * 1_000_000,
  });
}

/**
 * Tells executors: a core publish for processes running the job now, and (for a route whose kind
 * sends a cancel request, e.g. HTTP with a cancel_url) a durable entry for the one request. Resolves once the entry is stored.
 */
export async function publishCancelNotice(
  deps: {
    readonly nc: NatsConnection;
    readonly js: JetStreamClient;
    readonly jsm: JetStreamManager;
  },
  notice: CancelNotice,
  options: { readonly cancelRequest: boolean; readonly replicas: number },
): Promise<void> {
  const bytes = encoder.encode(JSON.stringify(notice));
  deps.nc.publish(cancelSubject(notice.client_id, notice.job_id), bytes);
  if (!options.cancelRequest) return;
  await ensureCancelQueue(deps.jsm, { replicas: options.replicas });
  await deps.js.publish(
    `${CANCEL_QUEUE_SUBJECT_ROOT}.${notice.client_id}.${notice.job_id}`,
    bytes,
    {
      msgID: `cancel:${notice.job_id}`,
    },
  );
}
