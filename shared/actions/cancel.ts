import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Clock } from "../clock/index.ts";
import type { RouteConfig } from "../config/index.ts";
import {
  type Actor,
  decideCancel,
  evolve,
  isCancelEvent,
  type JobState,
  type JobView,
  type RunRequested,
  type StatusIntent,
} from "../domain/index.ts";
import { cancelRequestOf } from "../executor-kinds/index.ts";
import type { IdGenerator } from "../ids/index.ts";
import {
  type CurrentStatus,
  type EventLayout,
  type EventStoreDeps,
  type JobRef,
  readLastEvent,
  readStatus,
  writeStatus,
} from "../jobs/index.ts";
import type { Logger } from "../log/index.ts";
import { publishCancelNotice } from "../schedule/index.ts";

export interface CancelDeps {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
  readonly jsm: JetStreamManager;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** The route's config (to know whether its HTTP executor takes cancel requests). */
  readonly route: (key: string) => RouteConfig | undefined;
  readonly replicas: number;
  readonly logger?: Pick<Logger, "warn">;
  /**
   * Told the stream sequence of each cancel appended here, so that this process's GET serves no
   * view older than it (read-your-writes: shared/jobs/reader.ts `appended`).
   */
  readonly appended?: (ref: JobRef, seq: number) => void;
}

export type CancelOutcome =
  /** The cancel was appended now (202): the job is final, the executor is being told. */
  | { readonly kind: "cancelled"; readonly job: JobView }
  /** It had been cancelled before (200). */
  | { readonly kind: "already_cancelled"; readonly job: JobView }
  /** It ended otherwise (409 job_final). */
  | { readonly kind: "final"; readonly job: JobView }
  | { readonly kind: "unknown" };

/** The job as its last `.run`, `.job`, `.cb` and `.ops` events say (read from the stream leader). */
async function currentJob(
  store: EventStoreDeps,
  ref: JobRef,
  status: CurrentStatus,
): Promise<{ run: RunRequested; view: JobView } | undefined> {
  const [run, cb, ops] = await Promise.all([
    readLastEvent(store, ref, "run"),
    readLastEvent(store, ref, "cb"),
    readLastEvent(store, ref, "ops"),
  ]);
  if (run?.event.type !== "run.requested") return undefined;
  let state: JobState = evolve(null, run.event);
  let seq = run.seq;
  for (const stored of [status.last, cb, ops]) {
    if (!stored) continue;
    state = evolve(state, stored.event);
    seq = Math.max(seq, stored.seq);
  }
  return state ? { run: run.event, view: { ...state, seq } } : undefined;
}

/**
 * Cancels a job for a client or an operator (POST /jobs/{id}/cancel, the operator API). The
 * domain decides (decideCancel); the cancel is the job's final event, appended through
 * writeStatus, so it and an executor's result cannot both end the job, and the completion
 * callback follows as for any final event. Then the executor is told, best effort.
 */
export async function cancelJob(
  deps: CancelDeps,
  input: { readonly clientId: string; readonly jobId: string; readonly by: Actor },
): Promise<CancelOutcome> {
  const ref = { client_id: input.clientId, job_id: input.jobId };
  const status = await readStatus(deps, ref);
  const found = await currentJob(deps, ref, status);
  if (found === undefined) return { kind: "unknown" };
  const decision = decideCancel(found.view, input.by);
  if (decision.kind === "already_cancelled") return { kind: decision.kind, job: found.view };
  if (decision.kind === "final") return { kind: "final", job: found.view };
  const { run } = found;
  const intent = {
    type: "job.error",
    data: {
      ...decision.intent.data,
      // The run summary: the callback service needs no read for the completion callback.
      run: {
        request_id: run.data.request_id,
        route: run.data.route,
        created_at: run.occurred_at,
        ...(run.data.callback_url === undefined ? {} : { callback_url: run.data.callback_url }),
      },
    },
  } as StatusIntent;
  const result = await writeStatus(deps, { ref, intent, known: status });
  if (result.kind === "refused") {
    const again = await currentJob(deps, ref, result.current);
    if (again === undefined) return { kind: "unknown" };
    return isCancelEvent(result.current.last?.event)
      ? { kind: "already_cancelled", job: again.view }
      : { kind: "final", job: again.view };
  }
  deps.appended?.(ref, result.seq);
  const route = deps.route(run.data.route);
  const executor = route?.executor;
  await publishCancelNotice(
    deps,
    {
      client_id: input.clientId,
      job_id: input.jobId,
      route: run.data.route,
      cancelled_at: result.event.occurred_at,
    },
    {
      // Also for a queued job: the first HTTP attempt is made before anything is recorded.
      cancelRequest: executor !== undefined && cancelRequestOf(executor) !== undefined,
      replicas: deps.replicas,
    },
  ).catch((err: unknown) =>
    deps.logger?.warn(
      { job_id: input.jobId, err: (err as Error).message },
      "cancel notice not sent; the executor learns it at its next write",
    ),
  );
  const view = evolve(found.view, result.event) as JobView;
  return { kind: "cancelled", job: { ...view, seq: result.seq } };
}
