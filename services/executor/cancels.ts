import type { JetStreamClient, JetStreamManager, JsMsg } from "@nats-io/jetstream";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import {
  consumeRecovering,
  ensureDurable,
  logConsumeRestarts,
  terminate,
} from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import type { RouteTable } from "../../shared/config/index.ts";
import { cancelRequestOf } from "../../shared/executor-kinds/index.ts";
import type { EventLayout } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import {
  CANCEL_QUEUE_CONSUMER,
  CANCEL_QUEUE_STREAM,
  CANCEL_QUEUE_SUBJECT_ROOT,
  CANCEL_SUBJECT_ROOT,
  type CancelNotice,
  decodeCancelNotice,
  ensureCancelQueue,
} from "../../shared/schedule/index.ts";
import { webhookHeaders } from "../../shared/webhooks/index.ts";

/** Per-job abort signals of the work this process is doing (builtins, HTTP attempts). */
export interface CancelSignals {
  /**
   * A signal aborted when the job is cancelled (already aborted when its cancel came first);
   * release it when the work ends.
   */
  track(jobId: string): { readonly signal: AbortSignal; release(): void };
  abort(jobId: string): void;
}

/**
 * Cancelled jobs remembered for work that starts after the notice: a cancel appended between the
 * executor's admission check and the work's `track` would otherwise reach nothing. A cancelled job
 * never runs again (a retry is a new job), so the newest few thousand are enough.
 */
const REMEMBERED_CANCELS = 4_096;

export function createCancelSignals(): CancelSignals {
  const running = new Map<string, Set<AbortController>>();
  /** Insertion-ordered: the oldest is dropped first. */
  const cancelled = new Set<string>();
  return {
    track(jobId) {
      const controller = new AbortController();
      if (cancelled.has(jobId)) controller.abort();
      let set = running.get(jobId);
      if (set === undefined) {
        set = new Set();
        running.set(jobId, set);
      }
      set.add(controller);
      return {
        signal: controller.signal,
        release() {
          set.delete(controller);
          if (set.size === 0) running.delete(jobId);
        },
      };
    },
    abort(jobId) {
      cancelled.add(jobId);
      if (cancelled.size > REMEMBERED_CANCELS) {
        cancelled.delete(cancelled.values().next().value as string);
      }
      for (const controller of running.get(jobId) ?? []) controller.abort();
    },
  };
}

/** The body of the cancel request an HTTP executor receives (docs/executors.md, "Cancel"). */
export function cancelRequestBody(notice: CancelNotice): string {
  return JSON.stringify({
    type: "job.cancelled",
    job_id: notice.job_id,
    route: notice.route,
    cancelled_at: notice.cancelled_at,
  });
}

export interface CancelListenerDeps {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  readonly routes: RouteTable;
  readonly signals: CancelSignals;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly replicas: number;
}

/**
 * The executor's side of a cancel (best effort; the job is final in the stream already): core
 * notices abort this process's work on the job, and the SWITCHYARD_CANCELS queue holds the one
 * signed cancel request per job for routes whose kind sends one (its descriptor's cancelRequest:
 * HTTP with a `cancel_url`), sent once by whichever executor replica takes it, whatever the answer.
 */
export async function startCancelListener(
  deps: CancelListenerDeps,
): Promise<{ stop(): Promise<void> }> {
  const { logger } = deps;
  const notices: Subscription = deps.nc.subscribe(`${CANCEL_SUBJECT_ROOT}.>`, {
    callback: (_err, msg) => {
      const notice = decodeCancelNotice(msg.data);
      if (notice) deps.signals.abort(notice.job_id);
    },
  });

  const send = async (msg: JsMsg) => {
    const notice = decodeCancelNotice(msg.data);
    const executor = notice && deps.routes.route(notice.route)?.executor;
    const target = executor && cancelRequestOf(executor);
    if (notice === undefined || target === undefined) {
      terminate(msg);
      return;
    }
    const body = cancelRequestBody(notice);
    const headers = webhookHeaders({
      id: `cancel_${notice.job_id}`,
      timestamp: Math.floor(deps.clock.now().getTime() / 1000),
      body,
      secrets: [target.secret],
    });
    try {
      const res = await fetch(target.url, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body,
        redirect: "manual",
        signal: AbortSignal.timeout(target.timeoutMs),
      });
      await res.body?.cancel();
      logger.info({ job_id: notice.job_id, status: res.status }, "cancel request sent");
    } catch (err) {
      logger.warn({ job_id: notice.job_id, err: (err as Error).message }, "cancel request failed");
    }
    msg.ack();
  };

  await ensureCancelQueue(deps.jsm, { replicas: deps.replicas });
  await ensureDurable(deps.jsm, {
    stream: CANCEL_QUEUE_STREAM,
    name: CANCEL_QUEUE_CONSUMER,
    filterSubject: `${CANCEL_QUEUE_SUBJECT_ROOT}.>`,
    ackWaitMs: 60_000,
    maxAckPending: 64,
  });
  const consumer = await deps.js.consumers.get(CANCEL_QUEUE_STREAM, CANCEL_QUEUE_CONSUMER);
  const queue = await consumeRecovering({
    consumer,
    nc: deps.nc,
    maxMessages: 16,
    restarted: logConsumeRestarts(logger, CANCEL_QUEUE_CONSUMER),
  });
  const loop = (async () => {
    for await (const msg of queue) {
      send(msg).catch((err: unknown) => {
        logger.error({ err: (err as Error).message }, "cancel request not sent; will retry");
        msg.nak(5_000);
      });
    }
  })();
  return {
    async stop() {
      notices.unsubscribe();
      await queue.close();
      await loop;
    },
  };
}
