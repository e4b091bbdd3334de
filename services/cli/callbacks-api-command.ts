import { parseArgs } from "node:util";
import type { AdminClient } from "./admin-client.ts";
import {
  listThroughApi,
  type OperatorIo,
  OperatorUsageError,
  reportError,
  whereQuery,
} from "./jobs-command.ts";

export const CALLBACKS_API_USAGE = `usage: switchyard callbacks failed [--where key=value]... [--limit n] [--all]
       switchyard callbacks redeliver <job_id>
       switchyard callbacks redeliver --where key=value... [--dry-run] [--yes]
  keys: client, status, route, error_code, tenant, request_id, created_after, created_before
  hub:   --url, else SWITCHYARD_ADMIN_URL, else SWITCHYARD_URL, else the switchyard up in this folder
  token: SWITCHYARD_OPERATOR_TOKEN`;

/** `--where` pairs as the bulk action's `where` object (a repeated key becomes a list). */
function whereObject(pairs: readonly string[]): Record<string, string | string[]> {
  const where: Record<string, string | string[]> = {};
  for (const [key, value] of whereQuery(pairs)) {
    const earlier = where[key];
    where[key] =
      earlier === undefined ? value : [...(Array.isArray(earlier) ? earlier : [earlier]), value];
  }
  return where;
}

async function redeliver(client: AdminClient, args: string[], io: OperatorIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      where: { type: "string", multiple: true },
      "dry-run": { type: "boolean" },
      yes: { type: "boolean" },
    },
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length === 1 && values.where === undefined) {
    const jobId = positionals[0] as string;
    const answer = await client.post<{ requested: boolean; reason?: string; message?: string }>(
      `/callbacks/${encodeURIComponent(jobId)}/redeliver`,
    );
    io.stdout(`redelivery of the callback of ${jobId} requested (same webhook-id)\n`);
    return answer.body.requested ? 0 : 1;
  }
  if (positionals.length > 0 || values.where === undefined) {
    throw new OperatorUsageError("redeliver takes one job id, or --where filters");
  }
  const where = whereObject(values.where);
  const dry = await client.post<{ matched: number }>("/callbacks/redeliver", {
    where,
    dry_run: true,
  });
  const matched = dry.body.matched;
  io.stderr(`${matched} failed callback(s) match\n`);
  if (values["dry-run"] || matched === 0) return 0;
  if (!values.yes) {
    if (!io.isTTY) throw new OperatorUsageError("redelivering in bulk from a script needs --yes");
    if (!(await io.confirm(`Redeliver ${matched} callback(s)? [y/N] `))) return 1;
  }
  const done = await client.post<{
    requested: number;
    refused: { job_id: string; reason: string }[];
  }>("/callbacks/redeliver", { where });
  io.stdout(`${done.body.requested} redelivery request(s) made\n`);
  for (const r of done.body.refused) io.stdout(`  not redelivered ${r.job_id}: ${r.reason}\n`);
  return 0;
}

/** `switchyard callbacks failed|redeliver` through the operator API. */
export async function runCallbacksApiCommand(
  args: string[],
  client: AdminClient,
  io: OperatorIo,
): Promise<number> {
  const [sub, ...rest] = args;
  try {
    if (sub === "failed") return await listThroughApi(client, rest, io, "/callbacks/failed");
    if (sub === "redeliver") return await redeliver(client, rest, io);
    throw new OperatorUsageError(
      sub ? `unknown callbacks command '${sub}'` : "callbacks needs a command",
    );
  } catch (err) {
    return reportError(err, io, CALLBACKS_API_USAGE);
  }
}
