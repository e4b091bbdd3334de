import { parseArgs } from "node:util";
import { AdminApiError, type AdminClient } from "./admin-client.ts";

/** What the operator commands need besides the API client. */
export interface OperatorIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** True when stdout is a terminal: tables; otherwise one JSON document per line. */
  readonly isTTY: boolean;
  /** Asks a yes/no question on the terminal (bulk actions); false when there is none. */
  readonly confirm: (question: string) => Promise<boolean>;
}

interface AdminJob {
  job_id: string;
  client_id: string;
  route: string;
  status: string;
  created_at: string;
  error?: { code: string };
  callback?: { status: string; attempts: number };
  retry_of?: string;
  retried_as?: string;
}

export const JOBS_USAGE = `usage: switchyard jobs list [--where key=value]... [--limit n] [--cursor c] [--all]
       switchyard jobs show <job_id>
       switchyard jobs cancel <job_id>
       switchyard jobs retry <job_id>
  keys: client, status, route, error_code, tenant, callback, request_id, created_after, created_before
  hub:   --url, else SWITCHYARD_ADMIN_URL, else SWITCHYARD_URL, else the switchyard up in this folder
  token: SWITCHYARD_OPERATOR_TOKEN`;

export class OperatorUsageError extends Error {}

/** `--where key=value` pairs as query parameters (each key may repeat). */
export function whereQuery(pairs: readonly string[]): URLSearchParams {
  const query = new URLSearchParams();
  for (const pair of pairs) {
    const at = pair.indexOf("=");
    if (at <= 0) throw new OperatorUsageError(`--where takes key=value, got '${pair}'`);
    query.append(pair.slice(0, at), pair.slice(at + 1));
  }
  return query;
}

const pad = (text: string, width: number) => text.slice(0, width).padEnd(width);

/** The columns of the table on a terminal: a header and its width (the last one unpadded). */
const COLUMNS = [
  ["JOB", 27],
  ["CLIENT", 14],
  ["ROUTE", 22],
  ["STATUS", 10],
  ["ERROR", 20],
  ["CALLBACK", 12],
  ["CREATED", 0],
] as const;

function row(cells: readonly string[]): string {
  return `${cells.map((cell, i) => (COLUMNS[i]?.[1] ? pad(cell, COLUMNS[i][1]) : cell)).join(" ")}\n`;
}

export interface PrintJobsOptions {
  readonly io: OperatorIo;
  /** The table's header row goes first (the first page of a listing). */
  readonly header: boolean;
}

/** One line per job: a table with a header row on a terminal, JSON lines in a pipe. */
export function printJobs(jobs: readonly AdminJob[], options: PrintJobsOptions): void {
  const { io } = options;
  if (!io.isTTY) {
    for (const job of jobs) io.stdout(`${JSON.stringify(job)}\n`);
    return;
  }
  if (options.header) io.stdout(row(COLUMNS.map(([name]) => name)));
  for (const job of jobs) {
    const callback = job.callback ? `${job.callback.status}/${job.callback.attempts}` : "-";
    io.stdout(
      row([
        job.job_id,
        job.client_id,
        job.route,
        job.status,
        job.error?.code ?? "-",
        callback,
        job.created_at,
      ]),
    );
  }
  if (options.header && jobs.length === 0) io.stdout("(no jobs match)\n");
}

async function list(client: AdminClient, args: string[], io: OperatorIo, path = "/jobs") {
  const { values } = parseArgs({
    args,
    options: {
      where: { type: "string", multiple: true },
      limit: { type: "string" },
      cursor: { type: "string" },
      all: { type: "boolean" },
    },
    strict: true,
  });
  const query = whereQuery(values.where ?? []);
  if (values.limit) query.set("limit", values.limit);
  let cursor = values.cursor;
  for (let first = true; ; first = false) {
    if (cursor) query.set("cursor", cursor);
    const page = await client.get<{ jobs: AdminJob[]; next_cursor: string | null }>(path, query);
    printJobs(page.body.jobs, { io, header: first });
    cursor = page.body.next_cursor ?? undefined;
    if (!values.all || cursor === undefined) break;
  }
  if (cursor && io.isTTY) io.stderr(`more: --cursor ${cursor} (or --all)\n`);
  return 0;
}

async function show(client: AdminClient, jobId: string, io: OperatorIo) {
  const { body } = await client.get<{
    job: AdminJob;
    timeline: { seq: number; time: string; type: string; data: unknown }[];
    callback_attempts: {
      attempt: number;
      at: string;
      outcome: string;
      status_code?: number;
      duration_ms?: number;
    }[];
    links: Record<string, string>;
  }>(`/jobs/${encodeURIComponent(jobId)}`);
  if (!io.isTTY) {
    io.stdout(`${JSON.stringify(body)}\n`);
    return 0;
  }
  io.stdout(`${JSON.stringify(body.job, null, 2)}\n\ntimeline\n`);
  for (const e of body.timeline)
    io.stdout(`  ${String(e.seq).padStart(8)}  ${e.time}  ${e.type}\n`);
  if (body.callback_attempts.length > 0) io.stdout("\ncallback attempts\n");
  for (const a of body.callback_attempts) {
    io.stdout(
      `  #${a.attempt} ${a.at} ${a.outcome} ${a.status_code ?? "-"} ${a.duration_ms ?? "-"} ms\n`,
    );
  }
  for (const [k, v] of Object.entries(body.links)) io.stdout(`${k}: ${v}\n`);
  return 0;
}

async function act(client: AdminClient, action: "cancel" | "retry", jobId: string, io: OperatorIo) {
  const answer = await client.post<{ job: AdminJob }>(
    `/jobs/${encodeURIComponent(jobId)}/${action}`,
  );
  const job = answer.body.job;
  if (!io.isTTY) io.stdout(`${JSON.stringify({ status: answer.status, ...answer.body })}\n`);
  else if (action === "cancel") {
    io.stdout(
      `${jobId}: ${answer.status === 202 ? "cancelled now" : "was cancelled before"} (${job.status}/${job.error?.code})\n`,
    );
  } else {
    io.stdout(
      `${jobId} retried as ${job.job_id} (${answer.status === 202 ? "new" : "existing"} job, ${job.status})\n`,
    );
  }
  return 0;
}

/** `switchyard jobs list|show|cancel|retry`, through the operator API. */
export async function runJobsCommand(
  args: string[],
  client: AdminClient,
  io: OperatorIo,
): Promise<number> {
  const [sub, ...rest] = args;
  try {
    switch (sub) {
      case "list":
        return await list(client, rest, io);
      case "show":
      case "cancel":
      case "retry": {
        // Strict: `jobs cancel --force <id>` is an unknown flag, not a job named "--force".
        const { positionals } = parseArgs({ args: rest, allowPositionals: true, strict: true });
        const jobId = positionals[0];
        if (!jobId || positionals.length > 1) {
          throw new OperatorUsageError(`jobs ${sub} needs one job id`);
        }
        return sub === "show" ? await show(client, jobId, io) : await act(client, sub, jobId, io);
      }
      default:
        throw new OperatorUsageError(
          sub ? `unknown jobs command '${sub}'` : "jobs needs a command",
        );
    }
  } catch (err) {
    return reportError(err, io, JOBS_USAGE);
  }
}

/** Exit codes: 2 for usage, 1 for a refusal of the hub. */
export function reportError(err: unknown, io: OperatorIo, usage: string): number {
  if (
    err instanceof OperatorUsageError ||
    (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")
  ) {
    // node:util's parse errors go on about '--' after their first sentence.
    const message =
      err instanceof OperatorUsageError ? err.message : (err as Error).message.split(/\.\s/)[0];
    io.stderr(`switchyard: ${message}\n${usage}\n`);
    return 2;
  }
  if (err instanceof AdminApiError) {
    io.stderr(`switchyard: ${err.message}\n`);
    return 1;
  }
  throw err;
}

export { list as listThroughApi };
