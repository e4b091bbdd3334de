/**
 * The text of permissions.conf (`switchyard permissions`) for a hub of P partitions: one NATS
 * user per role, its permissions, and the authorization block. deploy/nats/permissions.conf and
 * deploy/k8s/base/permissions.conf are its output for P = 1 (tests/unit/nats-permissions.test.ts).
 */
import { createEventLayout } from "../../../shared/jobs/index.ts";
import { type Line, namesOf } from "./entries.ts";
import { type RoleBlock, roleBlocks } from "./roles.ts";

/** The NATS users, in the order of the authorization block. */
export const NATS_ROLES = [
  "admin",
  "ingress",
  "projector",
  "indexer",
  "read-models",
  "executor",
  "callback",
  "worker",
  "auditor",
] as const;
export type NatsRole = (typeof NATS_ROLES)[number];

/** A role's name in the file's variables, which take no "-": READ_MODELS for read-models. */
const variableName = (role: NatsRole) => role.toUpperCase().replaceAll("-", "_");

/** The server's environment variable that holds a role's password: SY_READ_MODELS_PASSWORD. */
export const passwordVariable = (role: NatsRole) => `SY_${variableName(role)}_PASSWORD`;

function header(partitions: number): string[] {
  const streams =
    partitions === 1
      ? "stream SWITCHYARD_EVENTS, view bucket sy_jobs"
      : `streams SWITCHYARD_EVENTS_P0..P${partitions - 1}, view buckets sy_jobs_p0..p${partitions - 1}`;
  return [
    "# Switchyard's NATS users: one per role, each allowed only the subjects and JetStream API calls",
    '# its service makes (docs/security.md, "NATS: credentials, TLS and one user per role"). Include it from the server\'s config:',
    "#",
    "#   include ./permissions.conf",
    "#",
    `# Made by \`switchyard permissions --partitions ${partitions}\` for a hub of nats.partitions: ${partitions}`,
    `# (${streams}).`,
    "# A hub of another partition count needs that command's output for its count (docs/deploy.md,",
    '# "Choosing partitions"). Change services/cli/permissions/, not this file.',
    "#",
    "# Passwords come from the server's environment ($SY_<ROLE>_PASSWORD, from a Kubernetes Secret).",
    "# Every role replies on its own inbox prefix (nats.inbox_prefix: _INBOX_<role>), so no role can",
    "# read another's replies (JetStream acks, KV reads, pulled messages).",
    "#",
    "# Reads every role needs (JetStream account and stream/consumer info, the store-version mark):",
    "#   $JS.API.INFO, $JS.API.STREAM.INFO.*, $JS.API.STREAM.NAMES, $JS.API.STREAM.LIST,",
    "#   $JS.API.CONSUMER.INFO.*.*, $JS.API.CONSUMER.LIST.*, $JS.API.CONSUMER.NAMES.*,",
    "#   $JS.API.STREAM.MSG.GET.KV_sy_meta",
    "# Only the admin may create, update, delete or purge streams and consumers",
    "# ($JS.API.STREAM.CREATE/UPDATE/DELETE/PURGE.*, $JS.API.CONSUMER.CREATE/DURABLE.CREATE/DELETE.*).",
    "# Two narrow exceptions: the projector and the indexer recreate their own durable (and only it)",
    "# at start, from its acknowledged floor (read-models, the two in one process: both durables);",
    "# ordered consumers (the event readers) are ephemeral.",
  ];
}

const ADMIN = [
  "# switchyard setup, and `switchyard up` (every service in one process): everything.",
  "ADMIN_PERMISSIONS = {",
  '  publish: { allow: [">"] }',
  '  subscribe: { allow: [">"] }',
  "}",
];

const quote = (entry: string) => JSON.stringify(entry);

function listLines(lines: readonly Line[]): string[] {
  return lines.map((line) =>
    typeof line === "string" ? `      # ${line}` : `      ${line.map(quote).join(", ")},`,
  );
}

const permissionsName = (role: NatsRole) => `${variableName(role)}_PERMISSIONS`;

function roleText(block: RoleBlock): string[] {
  const deny = block.deny
    ? [
        "    # Ephemeral readers only: never create, change or pull from another role's durable by its name.",
        "    deny: [",
        ...listLines(block.deny),
        "    ]",
      ]
    : [];
  return [
    `# ${block.comment}`,
    `${permissionsName(block.role)} = {`,
    "  publish: {",
    ...deny,
    "    allow: [",
    ...listLines(block.allow),
    "    ]",
    "  }",
    ...(block.subscribeComment ? [`  # ${block.subscribeComment}`] : []),
    `  subscribe: { allow: [${block.subscribe.map(quote).join(", ")}] }`,
    "}",
  ];
}

const AUTHORIZATION = [
  "# One user per role. To rotate a role's password without downtime, add a second user with the",
  "# same permissions (for example { user: ingress_next, password: $SY_INGRESS_NEXT_PASSWORD,",
  "# permissions: $INGRESS_PERMISSIONS }), reload, move the pods over, remove the old user",
  '# (docs/deploy.md, "Rotating NATS credentials and certificates").',
  "authorization {",
  "  users = [",
  ...NATS_ROLES.map(
    (role) =>
      `    { user: ${role}, password: $${passwordVariable(role)}, permissions: $${permissionsName(role)} }`,
  ),
  "  ]",
  "}",
];

/**
 * permissions.conf for a hub of `partitions` partitions (1..MAX_PARTITIONS; InvalidPartitionsError
 * otherwise).
 */
export function natsPermissions(partitions: number): string {
  const names = namesOf(createEventLayout(partitions));
  const sections = [header(partitions), ADMIN, ...roleBlocks(names).map(roleText), AUTHORIZATION];
  return `${sections.map((lines) => lines.join("\n")).join("\n\n")}\n`;
}
