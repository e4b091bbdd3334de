/**
 * Dispatch of the commands that go through the operator API instead of NATS: `jobs …`,
 * `callbacks failed`, `callbacks redeliver --where …` (docs/operations.md, "From the command
 * line"). main.ts hands in the environment and the terminal.
 */
import { resolve } from "node:path";
import { UsageError } from "./args.ts";
import type { Env } from "./connect.ts";
import { DATA_DIR, runningHub } from "./data-dir.ts";
import type { OperatorIo } from "./jobs-command.ts";

/**
 * Where the operator API is: --url, else SWITCHYARD_ADMIN_URL, else SWITCHYARD_URL (the base URL
 * the SDKs read; the operator API is under it), else the `switchyard up` running in this folder
 * (./.data/hub.json), as the commands that use NATS find it.
 */
export function locateOperatorApi(env: Env, explicit?: string): string | undefined {
  return (
    explicit ||
    env.SWITCHYARD_ADMIN_URL ||
    env.SWITCHYARD_URL ||
    runningHub(resolve(DATA_DIR))?.api_url ||
    undefined
  );
}

/** True for the commands that go through the operator API rather than NATS. */
export function isOperatorCommand(argv: readonly string[], env: Env): boolean {
  const [first, second] = argv;
  if (first === "jobs") return true;
  if (first !== "callbacks") return false;
  // The group's own help covers both ways, whatever the environment says.
  if (second === undefined || second === "--help" || second === "-h") return false;
  return (
    second === "failed" ||
    argv.includes("--where") ||
    argv.includes("--url") ||
    env.SWITCHYARD_ADMIN_URL !== undefined
  );
}

/** `jobs …` and `callbacks failed|redeliver --where …`: the operator API ({@link locateOperatorApi}). */
export async function runOperatorCommand(
  argv: readonly string[],
  env: Env,
  io: OperatorIo,
): Promise<number> {
  const jobs = await import("./jobs-command.ts");
  const callbacks = await import("./callbacks-api-command.ts");
  const [first, ...rest] = argv;
  const usage = first === "jobs" ? jobs.JOBS_USAGE : callbacks.CALLBACKS_API_USAGE;
  if (rest.includes("--help") || rest.includes("-h")) {
    io.stdout(`${usage}\n`);
    return 0;
  }
  const at = rest.indexOf("--url");
  if (at >= 0 && (rest[at + 1] === undefined || rest[at + 1]?.startsWith("-"))) {
    throw new UsageError("--url needs the hub's base URL", usage);
  }
  const url = locateOperatorApi(env, at >= 0 ? rest[at + 1] : undefined);
  const args = at >= 0 ? [...rest.slice(0, at), ...rest.slice(at + 2)] : rest;
  const token = env.SWITCHYARD_OPERATOR_TOKEN;
  const missing = !url
    ? "no hub found: run this in the folder of a running `switchyard up`, or set SWITCHYARD_URL (or SWITCHYARD_ADMIN_URL, or --url) to the hub's base URL"
    : !token
      ? "set SWITCHYARD_OPERATOR_TOKEN to an operator token"
      : undefined;
  const { createAdminClient } = await import("./admin-client.ts");
  // Without a URL or token the arguments are still checked first: an unknown flag is reported
  // as such, and the missing setting only when the command would call the hub.
  const refuse = async (): Promise<never> => {
    throw new UsageError(missing ?? "", usage);
  };
  const client =
    missing === undefined
      ? createAdminClient({ baseUrl: url as string, token: token as string })
      : { get: refuse, post: refuse };
  return first === "jobs"
    ? jobs.runJobsCommand(args, client, io)
    : callbacks.runCallbacksApiCommand(args, client, io);
}
