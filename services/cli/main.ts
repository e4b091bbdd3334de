#!/usr/bin/env bun
/**
 * The `switchyard` command. This is the one module that reads process.env and argv: it turns them
 * into typed values and hands them to the commands. Every command takes --help / -h (help, exit
 * 0); unknown flags and arguments are usage errors (exit 2).
 */
import { type CommandSpec, parseCommand, UsageError } from "./args.ts";
import { endWhenReaderGoes, exitWhenFlushed } from "./exit.ts";
import { isOperatorCommand, runOperatorCommand } from "./operator-command.ts";
import {
  AUDIT_VERIFY_OPTIONS,
  EVENTS_OPTIONS,
  EVENTS_USAGE,
  PERMISSIONS_OPTIONS,
  PERMISSIONS_USAGE,
  SERVE_USAGE,
  SERVICE_NAMES,
  serveProblem,
} from "./options.ts";

// Everything else loads on use: --help and usage errors answer without starting the services.
type ServiceName = (typeof SERVICE_NAMES)[number];

const env = process.env;
const USAGE = `usage: switchyard <command> [--help]

  up                          run every service in one process (embedded nats-server if NATS_URL is unset)
  serve <service>...          run the named services in one process (${SERVICE_NAMES.join(", ")});
                              Kubernetes runs the read models together: serve projector indexer
  setup                       create or update streams, buckets and consumers (the admin's NATS credential)
  permissions [--partitions P] [--out file]   the NATS users and permissions (permissions.conf) for P partitions
  token new <id> [--operator] print a new client (or operator) token once, and the hash for the config
  projector rebuild           recreate the job view from the event stream (refused while a projector runs)
  migrate                     bring a store written by Switchyard 0.1 to this version (stop 0.1 first)
  tools <compile|validate|stats|publish> ...   tool definitions (docs/tools.md)
  callbacks redeliver <job_id> [--client <id>]   send a settled completion callback again
  events [--job id] [--client id] [--type t] [--since t] [--until t] [--from-seq n] [--limit n] [--partition p] [--follow] [--pretty]
  audit verify [--public-key file] [--file export.ndjson] [--nats-url url] [--partition p]   replay, compare views, check the signed chain
  audit keygen                key pair for signing audit checkpoints
  status                      streams, consumers, buckets, projector lag, jobs by status
  index rebuild               recreate the search index from the event stream (by the running indexer, if one runs)
  jobs <list|show|cancel|retry> ...             find and steer jobs through the operator API
  callbacks failed [--where k=v]...             failed callbacks, through the operator API
  callbacks redeliver --where k=v... [--dry-run] [--yes]   redeliver in bulk, through the operator API

Commands find the hub as 'up' does: NATS_URL, else the 'switchyard up' running in this folder
(./.data/hub.json), else nats.url of the config file, and connect with its nats.auth and nats.tls.
Only setup creates streams. The operator commands (jobs, callbacks failed, callbacks redeliver
--where) use the operator API instead: --url, else SWITCHYARD_ADMIN_URL, else SWITCHYARD_URL, else
the 'switchyard up' running in this folder.
environment: SWITCHYARD_CONFIG (default ./switchyard.yaml), NATS_URL, SWITCHYARD_LOG_LEVEL, NATS_SERVER_BIN,
  SWITCHYARD_URL or SWITCHYARD_ADMIN_URL, and SWITCHYARD_OPERATOR_TOKEN (the operator commands)`;

const stdio = {
  stdout: (text: string) => void process.stdout.write(text),
  stderr: (text: string) => void process.stderr.write(text),
};
const commandIo = { stderr: stdio.stderr, tty: process.stderr.isTTY === true };

const SPECS = {
  up: {
    usage:
      "usage: switchyard up\n\n  every service in one process; an embedded nats-server in ./.data unless NATS_URL is set",
  },
  // Any count: a name given twice is refused by name (serveProblem), not as "unexpected".
  serve: { usage: SERVE_USAGE, positionals: { min: 1, max: Number.MAX_SAFE_INTEGER } },
  setup: {
    usage:
      "usage: switchyard setup\n\n  creates or updates every stream, bucket and durable consumer with the config's NATS credential (the admin role), so services with nats.manage_topology: false can start (needs the config file)",
  },
  permissions: { usage: PERMISSIONS_USAGE, options: PERMISSIONS_OPTIONS },
  "token new": {
    usage:
      "usage: switchyard token new <id> [--operator]\n\n  prints a new random token once, and the SHA-256 for clients[].token_sha256\n  --operator  for operators[].token_sha256 (implied by an id with '.' or '@', which only operators may have)",
    options: { operator: { type: "boolean" } },
    positionals: { min: 1, max: 1 },
  },
  "projector rebuild": {
    usage:
      "usage: switchyard projector rebuild\n\n  recreates every job view from the event stream; stop the projector (or the hub) first",
  },
  "callbacks redeliver": {
    usage: "usage: switchyard callbacks redeliver <job_id> [--client <client_id>]",
    options: { client: { type: "string" } },
    positionals: { min: 1, max: 1 },
  },
  events: {
    usage: EVENTS_USAGE,
    options: EVENTS_OPTIONS,
  },
  "audit verify": {
    usage:
      "usage: switchyard audit verify [--public-key file] [--file export.ndjson] [--nats-url url] [--partition p]\n\n  needs no config file and no client secrets: an export file, or the hub's NATS",
    options: AUDIT_VERIFY_OPTIONS,
  },
  "audit keygen": { usage: "usage: switchyard audit keygen" },
  status: {
    usage: `usage: switchyard status

  takes no options: the nats-server version, the streams and their consumers (pending, ack
  pending, redelivered), the KV buckets, the projector's and the search index's lag, jobs by status.
  Finds the hub as every command does: NATS_URL, else ./.data/hub.json, else nats.url of the config file`,
  },
  "index rebuild": {
    usage:
      "usage: switchyard index rebuild\n\n  empties the search index and folds the whole events stream into it again (needs the config file).\n  No indexer running: this command folds, holding the indexer's lease. An indexer running: that indexer\n  rebuilds, and this command follows it to the end; the job views go on meanwhile.",
  },
  migrate: {
    usage:
      "usage: switchyard migrate\n\n  brings a store written by Switchyard 0.1 to this version; stop every 0.1 service first (needs the config file)",
  },
} satisfies Record<string, CommandSpec>;

type CommandName = keyof typeof SPECS;
const GROUPS: Readonly<Record<string, readonly string[]>> = {
  token: ["new"],
  projector: ["rebuild"],
  callbacks: ["redeliver"],
  audit: ["verify", "keygen"],
  index: ["rebuild"],
};

/**
 * Group help that lists more than GROUPS: `callbacks failed` (and bulk redeliver) go through the
 * operator API and are dispatched before GROUPS is consulted, but belong in the group's help.
 */
const GROUP_USAGE: Readonly<Record<string, string>> = {
  callbacks: `usage: switchyard callbacks <redeliver|failed> [--help]

  redeliver <job_id> [--client <id>]               send a settled completion callback again
  failed [--where k=v]... [--limit n] [--all]      failed callbacks, through the operator API
  redeliver --where k=v... [--dry-run] [--yes]     redeliver in bulk, through the operator API`,
};

function groupUsage(group: string, subs: readonly string[]): string {
  return GROUP_USAGE[group] ?? `usage: switchyard ${group} <${subs.join("|")}> [--help]`;
}

/** Splits argv into a command name ("token new") and its arguments; group help is usage. */
function commandOf(argv: readonly string[]): { name: CommandName; args: string[] } | undefined {
  const [first, second, ...rest] = argv;
  if (first === undefined) return undefined;
  const subs = GROUPS[first];
  if (subs) {
    if (second === undefined || second === "--help" || second === "-h") {
      throw new UsageError(
        second === undefined ? `${first} needs a subcommand` : "",
        groupUsage(first, subs),
      );
    }
    if (!subs.includes(second)) {
      throw new UsageError(`unknown ${first} subcommand '${second}'`, groupUsage(first, subs));
    }
    return { name: `${first} ${second}` as CommandName, args: rest };
  }
  if (!(first in SPECS)) throw new UsageError(`unknown command '${first}'`, USAGE);
  return { name: first as CommandName, args: [second, ...rest].filter((a) => a !== undefined) };
}

async function tokenNew(id: string, operator: boolean): Promise<number> {
  const { newToken } = await import("./token-command.ts");
  const result = newToken({ id, operator });
  if (!result.ok) throw new UsageError(result.problem, SPECS["token new"].usage);
  stdio.stdout(result.text);
  return 0;
}

type Hub = import("../../shared/hub/index.ts").HubConnection;

async function withHub<T>(name: string, use: (hub: Hub) => Promise<T>): Promise<T> {
  const { connectForCommand } = await import("./connect.ts");
  const hub = await connectForCommand(name, env, commandIo);
  try {
    return await use(hub);
  } finally {
    await hub.drain();
  }
}

async function rebuild(hub: Hub): Promise<number> {
  const { createLogger } = await import("../../shared/log/index.ts");
  const { rebuildProjection } = await import("../projector/index.ts");
  const logger = createLogger({ level: env.SWITCHYARD_LOG_LEVEL ?? "warn", service: "rebuild" });
  const steps = {
    lease_taken: "holding the projector lease: projector replicas stand by until the rebuild ends",
    views_purged: "views purged; replaying the event stream",
    caught_up: "caught up; releasing the lease to the projector replicas",
  } as const;
  const result = await rebuildProjection({
    nc: hub.nc,
    js: hub.js,
    jsm: hub.jsm,
    layout: hub.layout,
    logger,
    // Progress for people; pipes get the result line only.
    ...(commandIo.tty ? { onStep: (step) => stdio.stderr(`${steps[step]}\n`) } : {}),
  });
  stdio.stdout(`rebuilt ${result.jobs} job views from ${result.events} events\n`);
  return 0;
}

async function redeliver(args: string[], hub: Hub): Promise<number> {
  const { runCallbacksCommand } = await import("./callbacks-command.ts");
  const { systemClock } = await import("../../shared/clock/index.ts");
  const { randomIds } = await import("../../shared/ids/index.ts");
  return runCallbacksCommand(args, {
    hub,
    clock: systemClock,
    ids: randomIds,
    ...(env.USER ? { requestedBy: env.USER } : {}),
    ...stdio,
  });
}

async function indexRebuild(): Promise<number> {
  const { loadConfig } = await import("./connect.ts");
  const { runIndexRebuild } = await import("./index-command.ts");
  const { createLogger } = await import("../../shared/log/index.ts");
  const config = await loadConfig(env, true);
  if (config === undefined) return 1;
  const logger = createLogger({ level: env.SWITCHYARD_LOG_LEVEL ?? "warn", service: "index" });
  return withHub("index-rebuild", (hub) =>
    runIndexRebuild({ hub, config, logger, progress: process.stderr, stdout: stdio.stdout }),
  );
}

/** The terminal of the operator commands: tables and a yes/no question on a TTY. */
const operatorIo = {
  ...stdio,
  isTTY: process.stdout.isTTY === true,
  confirm: async (question: string) => {
    if (!process.stdin.isTTY) return false;
    process.stderr.write(question);
    for await (const line of console) return /^y(es)?$/i.test(line.trim());
    return false;
  },
};

/** A command's arguments as parseCommand read them against its spec. */
interface ParsedArgs {
  readonly positionals: readonly string[];
  readonly values: Readonly<Record<string, unknown>>;
}

async function run(name: CommandName, args: string[], parsed: ParsedArgs): Promise<number> {
  const { positionals } = parsed;
  switch (name) {
    case "up":
      await (await import("./run-commands.ts")).up(env, stdio.stdout);
      return -1;
    case "serve": {
      const problem = serveProblem(positionals);
      if (problem) throw new UsageError(problem, SPECS.serve.usage);
      await (await import("./run-commands.ts")).serve(positionals as ServiceName[], env);
      return -1;
    }
    case "setup":
      await (await import("./run-commands.ts")).setup(env);
      return 0;
    case "permissions": {
      const { runPermissionsCommand } = await import("./permissions-command.ts");
      const { partitions, out } = parsed.values as { partitions?: string; out?: string };
      return runPermissionsCommand({ partitions, out }, { ...stdio, env });
    }
    case "token new":
      return tokenNew(positionals[0] as string, parsed.values.operator === true);
    case "projector rebuild":
      return withHub("projector-rebuild", rebuild);
    case "callbacks redeliver":
      return withHub("callbacks", (hub) => redeliver(args, hub));
    case "events": {
      const { eventsArgsProblem, runEventsCommand } = await import("./events-command.ts");
      const problem = eventsArgsProblem(parsed.values);
      if (problem) throw new UsageError(problem, SPECS.events.usage);
      return withHub("events", (hub) => runEventsCommand(args, hub, stdio));
    }
    case "audit verify": {
      const { runAuditVerify } = await import("./audit-command.ts");
      const { connectForCommand, loadConfig } = await import("./connect.ts");
      const { openConfiguredIndex } = await import("./index-command.ts");
      return runAuditVerify(
        args,
        (url) => connectForCommand("audit", env, commandIo, url),
        stdio,
        // The search index too, when a usable config file says where it is. An auditor's
        // environment may hold the config without the clients' secrets it names: then the
        // events and views are verified and the index is left to the operators.
        async () => {
          const config = await loadConfig(env, false).catch(() => undefined);
          return config ? openConfiguredIndex(config) : undefined;
        },
      );
    }
    case "index rebuild":
      return indexRebuild();
    case "audit keygen":
      return (await import("./audit-command.ts")).runAuditKeygen(stdio);
    case "migrate":
      return (await import("./migrate-command.ts")).runMigrate(env, stdio.stdout);
    case "status": {
      const { runStatusCommand } = await import("./status-command.ts");
      return withHub("status", (hub) => runStatusCommand(hub, stdio));
    }
    default: {
      const unreachable: never = name;
      return unreachable;
    }
  }
}

async function main(argv: string[]): Promise<number> {
  const [first] = argv;
  if (first === undefined) {
    stdio.stderr(`${USAGE}\n`);
    return 2;
  }
  if (first === "help" || first === "--help" || first === "-h") {
    stdio.stdout(`${USAGE}\n`);
    return 0;
  }
  if (first === "tools") {
    const { runToolsCommand } = await import("./tools-command.ts");
    return runToolsCommand(argv.slice(1), {
      ...stdio,
      env,
      stderrIsTTY: process.stderr.isTTY === true,
    });
  }
  if (isOperatorCommand(argv, env)) return runOperatorCommand(argv, env, operatorIo);
  let command: ReturnType<typeof commandOf>;
  try {
    command = commandOf(argv);
  } catch (err) {
    if (err instanceof UsageError && err.message === "") {
      stdio.stdout(`${err.usage}\n`); // `switchyard token --help`
      return 0;
    }
    throw err;
  }
  if (!command) return 2;
  const spec: CommandSpec = SPECS[command.name];
  const parsed = parseCommand(spec, command.args);
  if (parsed.help) {
    stdio.stdout(`${spec.usage}\n`);
    return 0;
  }
  return run(command.name, command.args, parsed);
}

/**
 * Errors that are the user's to fix (a bad config, no hub, a locked data directory, a busy port,
 * a running projector): their message, no stack. Each carries one of these stable codes.
 */
const EXPLAINED = new Set([
  "invalid_config",
  "nats_server_not_found",
  "nats_unreachable",
  "hub_not_found",
  "no_hub",
  "data_dir_locked",
  "projector_running",
  "indexer_running",
  "rebuild_interrupted",
  "listen_failed",
  "store_outdated",
  "nats_auth_refused",
  "nats_tls_failed",
  "nats_file_unreadable",
  "topology_not_set_up",
]);

if (import.meta.main) {
  const argv = Bun.argv.slice(2);
  if (argv[0] !== "up" && argv[0] !== "serve") {
    endWhenReaderGoes({
      stdout: process.stdout,
      stderr: stdio.stderr,
      exit: (code) => void exitWhenFlushed(code),
    });
  }
  main(argv)
    .then(async (code) => {
      if (code >= 0) await exitWhenFlushed(code);
    })
    .catch(async (err: unknown) => {
      if (err instanceof UsageError) {
        process.stderr.write(`switchyard: ${err.message}\n\n${err.usage}\n`);
        return exitWhenFlushed(2);
      }
      if (EXPLAINED.has(String((err as { code?: unknown }).code))) {
        process.stderr.write(`switchyard: ${(err as Error).message}\n`);
        return exitWhenFlushed(1);
      }
      process.stderr.write(`switchyard: ${(err as Error).stack ?? String(err)}\n`);
      return exitWhenFlushed(1);
    });
}

export { main };
