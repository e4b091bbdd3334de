import {
  DiscardPolicy,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
} from "@nats-io/jetstream";
import { ensureStream } from "../bus/index.ts";

/*
 * Work-queue streams of scheduled hub work. A message is deleted once acked, so each holds only
 * work still to do; nothing here is history (the events stream is), and every entry can be derived
 * from the events (`switchyard migrate` derives them for a 0.1 store).
 */

/** Deadline timers of jobs handed to executors that finish later (NATS workers, HTTP 202, queued HTTP). */
export const DEADLINE_STREAM = "SWITCHYARD_DEADLINES";
export const DEADLINE_SUBJECT_ROOT = "sy.deadline";

/** Deadline timers of one deadline length: in one subject, due order is publish order. */
export function deadlineSubject(durationMs: number): string {
  return `${DEADLINE_SUBJECT_ROOT}.${durationMs}`;
}

/** Durable name of the deadline consumer of one deadline length. */
export function deadlineConsumerName(durationMs: number): string {
  return `deadline_${durationMs}`;
}

/** The deadline length a `deadline_<ms>` consumer serves, or undefined for other names. */
export function deadlineOfConsumer(name: string): number | undefined {
  const match = /^deadline_(\d+)$/.exec(name);
  return match ? Number(match[1]) : undefined;
}

/**
 * Callback deliveries waiting for their time: a retry, a free lane, or an operator's redelivery.
 * One subject per job with at most one message (the newest replaces an older one), so a job never
 * has two wake-ups and a stale one cannot survive a newer schedule.
 */
export const CALLBACK_QUEUE_STREAM = "SWITCHYARD_CALLBACKS";
export const CALLBACK_QUEUE_SUBJECT_ROOT = "sy.cbq";
export const CALLBACK_QUEUE_CONSUMER = "callback-queue";

export function callbackQueueSubject(clientId: string, jobId: string): string {
  return `${CALLBACK_QUEUE_SUBJECT_ROOT}.${clientId}.${jobId}`;
}

const TWO_MINUTES_NS = 2 * 60_000 * 1_000_000;

/** Creates (or updates) the deadline and callback work-queue streams. */
export async function ensureScheduleStreams(
  jsm: JetStreamManager,
  options: { readonly replicas: number },
): Promise<void> {
  const common = {
    storage: StorageType.File,
    retention: RetentionPolicy.Workqueue,
    num_replicas: options.replicas,
    duplicate_window: TWO_MINUTES_NS,
  };
  await ensureStream(jsm, {
    ...common,
    name: DEADLINE_STREAM,
    subjects: [`${DEADLINE_SUBJECT_ROOT}.*`],
    discard: DiscardPolicy.New,
  });
  await ensureStream(jsm, {
    ...common,
    name: CALLBACK_QUEUE_STREAM,
    subjects: [`${CALLBACK_QUEUE_SUBJECT_ROOT}.*.*`],
    // The newest wake-up of a job replaces the one before it.
    discard: DiscardPolicy.Old,
    max_msgs_per_subject: 1,
  });
}
