/**
 * Settings shared by the PostgreSQL peer's HTTP server, worker and the benchmark that sets up its
 * database (env: PG_URL, a database of its own that the benchmark creates and drops).
 */
import { Logger } from "graphile-worker";

export const PG_URL = process.env.PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** graphile-worker's task name for a run. */
export const TASK = "run";

/**
 * The runs table: one row per (client, request_id), keyed by the job id derived from both
 * (app.ts `peerJobId`), so an insert that conflicts is a replay.
 */
export const SCHEMA_SQL = `
CREATE TABLE IF NOT EXISTS runs (
  job_id       text PRIMARY KEY,
  client       text NOT NULL,
  request_id   text NOT NULL,
  route        text NOT NULL,
  input        text NOT NULL,
  metadata     jsonb,
  callback_url text,
  status       text NOT NULL DEFAULT 'queued',
  output       text,
  created_at   timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
)`;

/** What a queued job carries, so the worker reads nothing before it works. */
export interface RunPayload {
  readonly job_id: string;
  readonly request_id: string;
  readonly route: string;
  readonly input: string;
  readonly callback_url: string | null;
  readonly created_at: string;
}

/** graphile-worker logs every job at info; the benchmark wants errors only. */
export const quietLogger = new Logger(() => (level, message) => {
  if (level === "error") process.stderr.write(`graphile-worker: ${message}\n`);
});
