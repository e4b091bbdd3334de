import type { JobEvent } from "../../shared/domain/index.ts";

/** One job's identity and what its events carry, for the common path's event shapes. */
export interface JobEventsInput {
  readonly jobId: string;
  readonly clientId: string;
  /** The run's input (and the echo's output). */
  readonly input: string;
  /** When the run was accepted; each event's occurred_at too. */
  readonly at: string;
  /** The event ids are `evt_<idSuffix><letter>`: unique per job in the duplicate window. */
  readonly idSuffix: string;
}

/**
 * The three events of a job on the common path (run.requested, job.done, callback.delivered), as
 * the ingress, the executor and the callback service write them for a builtin echo route with a
 * callback (docs/architecture.md, "The lean event path").
 */
export function commonPathEvents(job: JobEventsInput): readonly JobEvent[] {
  const ref = { job_id: job.jobId, client_id: job.clientId, schema_version: 1 as const };
  const run = {
    request_id: `req-${job.idSuffix}`,
    route: "bench.echo",
    created_at: job.at,
    callback_url: "http://127.0.0.1:9000/cb",
  };
  return [
    {
      id: `evt_${job.idSuffix}A`,
      type: "run.requested",
      ...ref,
      occurred_at: job.at,
      data: {
        request_id: run.request_id,
        route: run.route,
        input: job.input,
        callback_url: run.callback_url,
        fingerprint: "0".repeat(64),
      },
    },
    {
      id: `evt_${job.idSuffix}B`,
      type: "job.done",
      ...ref,
      occurred_at: job.at,
      data: { output: job.input, run },
    },
    {
      id: `evt_${job.idSuffix}C`,
      type: "callback.delivered",
      ...ref,
      occurred_at: job.at,
      data: { attempts: 1, status_code: 204, duration_ms: 1.2 },
    },
  ];
}
