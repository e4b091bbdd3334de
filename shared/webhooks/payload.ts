/** Final job statuses that trigger a completion callback. */
export type FinalJobStatus = "done" | "error" | "rejected";

/** `data` of a `job.completed` callback. Exactly one of `output` / `error` is present. */
export interface JobCompletedData {
  job_id: string;
  request_id: string;
  route: string;
  status: FinalJobStatus;
  output?: unknown;
  error?: { code: string; message: string };
  created_at: string;
  completed_at: string;
  /** Set when the output was cut to fit the callback size limit; poll the job for the full record. */
  truncated?: boolean;
}

/** Body of a completion callback, as signed and sent by Switchyard. */
export interface JobCompletedEvent {
  type: "job.completed";
  /** ISO 8601 time the event was created. */
  timestamp: string;
  data: JobCompletedData;
}
