import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { InvalidArgumentError } from "@nats-io/transport-node";
import {
  type AppendResult,
  appendEvent,
  classifyNatsError,
  readLastEvent,
} from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import type { ClientConfig } from "../../shared/config/index.ts";
import {
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
import type { JobReader } from "../../shared/jobs/index.ts";
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
 * Accepts a run with one JetStream publish: run.requested on the job's `.run` subject with
 * Nats-Msg-Id = job id (cheap duplicate answers inside the window) and expected last subject
 * sequence 0 (the guard that does not expire). A 202 is only returned after JetStream's ack.
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

  const existing = async (client: ClientConfig, jobId: string, fingerprint: string) => {
    const run = await readLastEvent(deps.jsm, client.id, jobId, "run");
    if (!run) {
      throw new UnavailableError({
        detail: "The earlier run for this request_id could not be read; retry shortly.",
        headers: { "retry-after": "1" },
      });
    }
    if (run.event.type !== "run.requested" || run.event.data.fingerprint !== fingerprint) {
      throw conflict(run.event.type === "run.requested" ? run.event.data.request_id : "");
    }
    const view = await deps.reader.get(client.id, jobId);
    const state = view ?? (evolve(null, run.event) as JobView);
    return toJobResource(state);
  };

  return {
    async submit(client, request, traceparent) {
      const jobId = deps.deriveJobId(client.id, request.request_id);
      const fingerprint = requestFingerprint(request);
      // A view exists only once run.requested is stored, so a cached (settled) view means "seen
      // before": answer the replay (or the conflict) from it, without a publish or a stream read.
      const seen = deps.reader.cached?.(client.id, jobId);
      if (seen) {
        if (seen.fingerprint !== fingerprint) throw conflict(seen.request_id);
        return { created: false, job: toJobResource(seen) };
      }
      const runBytes = storedRunBytes(request);
      if (!(await deps.storage.admits(runBytes).catch(unavailableOr))) {
        // A request seen before is answered as a replay even when new runs are refused.
        const run = await readLastEvent(deps.jsm, client.id, jobId, "run").catch(unavailableOr);
        if (!run) throw storageFull();
        return { created: false, job: await existing(client, jobId, fingerprint) };
      }
      const event: RunRequested = {
        id: deps.ids.next("evt"),
        type: "run.requested",
        schema_version: 1,
        job_id: jobId,
        client_id: client.id,
        occurred_at: deps.clock.now().toISOString(),
        data: {
          request_id: request.request_id,
          route: request.route,
          input: request.input,
          ...(request.metadata === undefined ? {} : { metadata: request.metadata }),
          ...(request.callback_url === undefined ? {} : { callback_url: request.callback_url }),
          fingerprint,
        },
      };
      let result: AppendResult;
      try {
        result = await appendEvent(deps.js, event, {
          msgId: jobId,
          expectedLastSubjectSeq: 0,
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
      deps.storage.done(runBytes, result.kind === "conflict" ? undefined : result.seq);
      if (result.kind === "appended") {
        return { created: true, job: toJobResource(evolve(null, event) as JobView) };
      }
      const job = await existing(client, jobId, fingerprint).catch(unavailableOr);
      return { created: false, job };
    },
  };
}
