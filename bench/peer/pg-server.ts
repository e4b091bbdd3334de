/**
 * The PostgreSQL peer's HTTP server: the same Fastify app as the Redis peer (app.ts), with a runs
 * table and graphile-worker as its store, on a database with synchronous_commit on. POST /run is
 * one statement, so one transaction and one WAL flush: insert the run unless its id exists, and
 * queue its job (graphile_worker.add_job) only when the insert happened.
 *
 * Env: PORT, PEER_TOKEN, PG_URL, PG_POOL (connections, default 24). Prints "LISTENING <port>".
 */
import pg from "pg";
import { createPeerApp, type PeerJobView, type PeerStore, servePeer } from "./app.ts";
import { PG_URL, TASK } from "./pg-common.ts";

const pool = new pg.Pool({ connectionString: PG_URL, max: Number(process.env.PG_POOL ?? 24) });

const ADD_RUN = `
WITH inserted AS (
  INSERT INTO runs (job_id, client, request_id, route, input, metadata, callback_url)
  VALUES ($1, $2, $3, $4, $5, $6, $7)
  ON CONFLICT (job_id) DO NOTHING
  RETURNING job_id, request_id, route, input, callback_url, created_at
)
SELECT graphile_worker.add_job('${TASK}', row_to_json(inserted)) FROM inserted`;

const GET_RUN = `
SELECT job_id, request_id, route, status, output, created_at, completed_at
FROM runs WHERE job_id = $1 AND client = $2`;

interface RunRow {
  job_id: string;
  request_id: string;
  route: string;
  status: string;
  output: string | null;
  created_at: Date;
  completed_at: Date | null;
}

const store: PeerStore = {
  async add(jobId, run) {
    await pool.query({
      name: "add-run",
      text: ADD_RUN,
      values: [
        jobId,
        run.client,
        run.request_id,
        run.route,
        run.input,
        run.metadata ?? null,
        run.callback_url ?? null,
      ],
    });
  },
  async get(jobId, client) {
    const { rows } = await pool.query<RunRow>({
      name: "get-run",
      text: GET_RUN,
      values: [jobId, client],
    });
    const row = rows[0];
    if (!row) return undefined;
    const view: PeerJobView = {
      job_id: row.job_id,
      request_id: row.request_id,
      route: row.route,
      status: row.status,
      created_at: row.created_at.toISOString(),
      ...(row.completed_at ? { completed_at: row.completed_at.toISOString() } : {}),
      ...(row.output !== null ? { output: row.output } : {}),
    };
    return view;
  },
};

await servePeer(createPeerApp(process.env.PEER_TOKEN ?? "", store), () => pool.end());
