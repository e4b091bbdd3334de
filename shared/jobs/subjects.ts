/**
 * Which job: the pair that names its subjects and its view. Every function of the job stream
 * takes one; where a job's events live is derived from it by the layout (layout.ts) alone. An event is a JobRef
 * (it carries both ids), so appends and projections pass it as is.
 */
export interface JobRef {
  readonly client_id: string;
  readonly job_id: string;
}

/** The job view's KV key: scoped by client so one client can never read another's job. */
export function jobViewKey(ref: JobRef): string {
  return `${ref.client_id}.${ref.job_id}`;
}
