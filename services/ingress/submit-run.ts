import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { InvalidArgumentError } from "@nats-io/transport-node";
import { type AcceptOutcome, acceptRun } from "../../shared/actions/index.ts";
import { classifyNatsError } from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import type { ClientConfig } from "../../shared/config/index.ts";
import {
  decideReplay,
  evolve,
  type JobResource,
  type JobView,
  type RunRequested,
  requestFingerprint,
  toJobResource,
} from "../../shared/domain/index.ts";
import {
  PayloadTooLargeError,
  RequestConflictError,
  UnavailableError,
} from "../../shared/errors/index.ts";
import type { IdGenerator, JobIdDeriver } from "../../shared/ids/index.ts";
import {
  type EventLayout,
  type JobReader,
  type JobRef,
  readLastEvent,
} from "../../shared/jobs/index.ts";
import type { RunRequest } from "./run-request.ts";
import { type StorageGuard, storageFull, storedRunBytes } from "./storage-guard.ts";

export interface SubmitOutcome {
  /** true: a new job (202); false: the same request seen before (200). */
  readonly created: boolean;
  readonly job: JobResource;
}

export interface RunSubmitter {
  submit(client: ClientConfig, request: RunRequest, traceparent?: string): Promise<SubmitOutcome>;
}

export interface RunSubmitterDeps {
  readonly js: JetStreamClient;
  /** Names the stream, subjects and view bucket of each job's partition. */
  readonly layout: EventLayout;
  readonly jsm: JetStreamManager;
  readonly reader: JobReader;
  readonly deriveJobId: JobIdDeriver;
  readonly ids: IdGenerator;
  readonly clock: Clock;
  readonly publishTimeoutMs: number;
  /** Refuses new runs once the events stream is near its byte limit. */
  readonly storage: StorageGuard;
}

/**
 * Accepts a run through shared/actions `acceptRun` (one JetStream publish; a 202 only after
 * JetStream's ack) and answers it as a job resource. A settled view in this process's cache
 * answers a replay (or a conflict) without a publish or a stream read.
 */
export function createRunSubmitter(deps: RunSubmitterDeps): RunSubmitter {
  const conflict = (requestId: string) =>
    new RequestConflictError({
      detail: `request_id '${requestId}' was already used with a different body; use a new request_id for new work.`,
    });

  /** A NATS failure as the hub's typed error (503), anything else as it is. */
  const unavailableOr = (err: unknown): never => {
    throw classifyNatsError(err) ?? err;
  };

  const replayed = async (ref: JobRef, run: RunRequested): Promise<SubmitOutcome> => {
    const view = await deps.reader.get(ref);
    return { created: false, job: toJobResource(view ?? (evolve(null, run) as JobView)) };
  };

  return {
    async submit(client, request, traceparent) {
      const ref = { client_id: client.id, job_id: deps.deriveJobId(client.id, request.request_id) };
      const fingerprint = requestFingerprint(request);
      // A view exists only once run.requested is stored, so a cached (settled) view means "seen
      // before": answer the replay (or the conflict) from it, without a publish or a stream read.
      const seen = deps.reader.cached?.(ref);
      if (seen) {
        const decision = decideReplay(seen, fingerprint);
        if (decision.kind === "conflict") throw conflict(decision.request_id);
        return { created: false, job: toJobResource(seen) };
      }
      const runBytes = storedRunBytes(request);
      if (!(await deps.storage.admits(runBytes).catch(unavailableOr))) {
        // A request seen before is answered as a replay even when new runs are refused.
        const run = await readLastEvent(deps, ref, "run").catch(unavailableOr);
        if (run?.event.type !== "run.requested") throw storageFull();
        const decision = decideReplay(run.event.data, fingerprint);
        if (decision.kind === "conflict") throw conflict(decision.request_id);
        return await replayed(ref, run.event).catch(unavailableOr);
      }
      let outcome: AcceptOutcome;
      try {
        outcome = await acceptRun(deps, {
          ref,
          data: {
            request_id: request.request_id,
            route: request.route,
            input: request.input,
            ...(request.metadata === undefined ? {} : { metadata: request.metadata }),
            ...(request.callback_url === undefined ? {} : { callback_url: request.callback_url }),
            fingerprint,
          },
          timeoutMs: deps.publishTimeoutMs,
          ...(traceparent === undefined ? {} : { traceparent }),
        });
      } catch (err) {
        deps.storage.done(runBytes);
        if (err instanceof InvalidArgumentError) {
          // Only the payload size is an invalid argument here (the subject is built from checked
          // ids). The body limit is derived so this cannot happen; if it does, say what it is.
          throw new PayloadTooLargeError({
            detail:
              "The run's event would be larger than the event store accepts (NATS max_payload); send a smaller body.",
            cause: err,
          });
        }
        throw classifyNatsError(err) ?? err;
      }
      deps.storage.done(runBytes, outcome.kind === "created" ? outcome.seq : undefined);
      switch (outcome.kind) {
        case "created":
          return { created: true, job: toJobResource(outcome.job) };
        case "replayed":
          return await replayed(ref, outcome.run).catch(unavailableOr);
        case "conflict":
          throw conflict(outcome.request_id);
        case "unread":
          throw new UnavailableError({
            detail: "The earlier run for this request_id could not be read; retry shortly.",
            headers: { "retry-after": "1" },
          });
      }
    },
  };
}
