import { type Static, Type } from "@sinclair/typebox";
import { ExecutorConfigSchema } from "../executor-kinds/index.ts";
import { DURATION_PATTERN } from "./duration.ts";
import { AdminApiConfig, ConsoleConfig, IndexConfig, OperatorConfig } from "./operations.ts";

const Duration = (defaultValue: string, description: string) =>
  Type.String({ pattern: DURATION_PATTERN, default: defaultValue, description });

/** Client ids and route keys travel in NATS subjects, so they are restricted to subject-safe text. */
export const CLIENT_ID_PATTERN = "^[A-Za-z0-9_-]{1,64}$";
export const ROUTE_KEY_PATTERN = "^[a-z0-9_-]+(\\.[a-z0-9_-]+)*$";
const ROUTE_RULE_PATTERN = "^([a-z0-9_-]+(\\.[a-z0-9_-]+)*)(\\.\\*)?$|^\\*$";

const JwtConfig = Type.Object(
  {
    issuer: Type.String({ minLength: 1 }),
    audience: Type.String({ minLength: 1 }),
    subject: Type.Optional(Type.String({ minLength: 1 })),
    jwks_url: Type.Optional(Type.String({ pattern: "^https?://" })),
    public_key_pem: Type.Optional(Type.String({ minLength: 1 })),
    algorithms: Type.Array(
      Type.Union(
        ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"].map((a) =>
          Type.Literal(a),
        ),
      ),
      { minItems: 1, uniqueItems: true },
    ),
    clock_tolerance_sec: Type.Integer({ minimum: 0, maximum: 300, default: 30 }),
    /**
     * Tokens must carry `exp`. Set false only to accept long-lived tokens from this issuer on
     * purpose: they are then valid until the key that signed them is withdrawn.
     */
    require_exp: Type.Boolean({ default: true }),
  },
  { additionalProperties: false },
);

/** RFC 3339 with a zone: when a rotated-out credential stops being accepted or used. */
const RETIRE_AT_PATTERN =
  "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:\\d{2})$";
const RetireAt = Type.String({
  pattern: RETIRE_AT_PATTERN,
  description: "From this moment (RFC 3339) the entry is no longer accepted or used.",
});
const TOKEN_SHA256 = Type.String({ pattern: "^[0-9a-f]{64}$" });
const WHSEC = Type.String({ pattern: "^whsec_[A-Za-z0-9+/=]+$" });

const ClientConfig = Type.Object(
  {
    id: Type.String({ pattern: CLIENT_ID_PATTERN }),
    /** Hashes of the client's tokens; an entry with retire_at stops working at that moment. */
    token_sha256: Type.Array(
      Type.Union([
        TOKEN_SHA256,
        Type.Object({ sha256: TOKEN_SHA256, retire_at: RetireAt }, { additionalProperties: false }),
      ]),
      { default: [] },
    ),
    jwt: Type.Optional(JwtConfig),
    routes: Type.Array(Type.String({ pattern: ROUTE_RULE_PATTERN }), { minItems: 1 }),
    runs_per_minute: Type.Integer({ minimum: 1, default: 600 }),
    /** Every active secret signs each callback (one signature each); retire_at ends one. */
    callback_secrets: Type.Array(
      Type.Union([
        WHSEC,
        Type.Object({ secret: WHSEC, retire_at: RetireAt }, { additionalProperties: false }),
      ]),
      { default: [] },
    ),
    callback_retry_schedule: Type.Optional(
      Type.Array(Type.String({ pattern: DURATION_PATTERN }), { minItems: 1, maxItems: 30 }),
    ),
  },
  { additionalProperties: false },
);

/** Completion callbacks: egress policy, per-attempt budget and the default retry schedule. */
const CallbacksConfig = Type.Object(
  {
    allow_cidrs: Type.Array(Type.String({ minLength: 1 }), {
      default: [],
      description: "CIDR blocks callbacks may reach although they are private or special-purpose.",
    }),
    allow_private: Type.Boolean({
      default: false,
      description: "Development only: allow every special range except cloud metadata.",
    }),
    timeout: Duration("15s", "Budget of one attempt: DNS, connect, TLS, request and response."),
    max_response_bytes: Type.Integer({
      minimum: 1024,
      maximum: 16_777_216,
      default: 65_536,
      description:
        "Largest receiver answer body read (and discarded); above it the attempt fails as response_too_large.",
    }),
    retry_schedule: Type.Array(Type.String({ pattern: DURATION_PATTERN }), {
      maxItems: 30,
      default: ["5s", "5m", "30m", "2h", "5h", "10h", "10h"],
      description: "Delays before each retry; the first attempt is immediate.",
    }),
    jitter: Type.Number({ minimum: 0, maximum: 0.5, default: 0.2 }),
    max_retry_after: Duration("1h", "Longest Retry-After a receiver can ask for."),
    concurrency: Type.Integer({
      minimum: 1,
      maximum: 4096,
      default: 256,
      description: "Callback attempts in flight at once per callback process.",
    }),
    per_destination_concurrency: Type.Integer({
      minimum: 1,
      maximum: 4096,
      default: 64,
      description:
        "Attempts in flight at once to one destination (scheme, host and port); a slow receiver holds at most these.",
    }),
    max_waiting_per_destination: Type.Integer({
      minimum: 1,
      maximum: 100_000,
      default: 5_000,
      description:
        "Callbacks one destination may hold waiting in memory; beyond it they wait in the SWITCHYARD_CALLBACKS queue.",
    }),
  },
  { additionalProperties: false, default: {} },
);

const RouteConfig = Type.Object(
  {
    key: Type.String({ pattern: ROUTE_KEY_PATTERN, maxLength: 128 }),
    enabled: Type.Boolean({ default: true }),
    max_input_bytes: Type.Integer({ minimum: 1, maximum: 10_485_760, default: 65_536 }),
    deadline: Duration("15m", "How long a job may stay non-final before it errors."),
    /** Tasks of this route in flight at once, over every executor replica and worker. */
    concurrency: Type.Integer({ minimum: 1, maximum: 10_000, default: 16 }),
    executor: ExecutorConfigSchema,
    tool_set: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);

/**
 * How a service proves itself to NATS: exactly one of user and password, token, nkey_seed or
 * creds_file. Secrets come from `${file:PATH}` or `${ENV}`, never from the file itself.
 */
const NatsAuthConfig = Type.Object(
  {
    user: Type.Optional(Type.String({ minLength: 1 })),
    password: Type.Optional(Type.String({ minLength: 1 })),
    token: Type.Optional(Type.String({ minLength: 1 })),
    nkey_seed: Type.Optional(
      Type.String({ minLength: 1, description: "An NKey user seed (SU…)." }),
    ),
    creds_file: Type.Optional(
      Type.String({ minLength: 1, description: "Path of a .creds file (user JWT and seed)." }),
    ),
  },
  { additionalProperties: false },
);

/** TLS to NATS: the CA that signed the server, and a client certificate for mTLS. */
const NatsTlsConfig = Type.Object(
  {
    ca_file: Type.Optional(Type.String({ minLength: 1 })),
    cert_file: Type.Optional(Type.String({ minLength: 1 })),
    key_file: Type.Optional(Type.String({ minLength: 1 })),
    server_name: Type.Optional(
      Type.String({ minLength: 1, description: "Name the server certificate must carry." }),
    ),
  },
  { additionalProperties: false },
);

export const ConfigSchema = Type.Object(
  {
    server: Type.Object(
      {
        host: Type.String({ default: "127.0.0.1" }),
        port: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
        base_url: Type.Optional(Type.String({ pattern: "^https?://" })),
        max_body_bytes: Type.Optional(
          Type.Integer({
            minimum: 1024,
            maximum: 67_108_864,
            description:
              "Request body limit (413). Unset: 1 MiB, or less when NATS max_payload needs it.",
          }),
        ),
        metadata: Type.Object(
          {
            max_depth: Type.Integer({ minimum: 1, maximum: 64, default: 16 }),
            max_members: Type.Integer({ minimum: 1, maximum: 100_000, default: 256 }),
            max_string_length: Type.Integer({ minimum: 1, maximum: 1_048_576, default: 4096 }),
          },
          {
            additionalProperties: false,
            default: {},
            description: "Bounds on a run's metadata; above them 400 naming the key.",
          },
        ),
        max_url_length: Type.Integer({ minimum: 256, maximum: 65_536, default: 4096 }),
        max_header_bytes: Type.Integer({
          minimum: 1024,
          maximum: 16_384,
          default: 8192,
          description: "Request header limit (431); Bun itself refuses above 16 KiB.",
        }),
        auth_failures_per_minute: Type.Integer({
          minimum: 1,
          default: 30,
          description: "Failed authentications per source address before 429 (docs/security.md).",
        }),
        trust_proxy_hops: Type.Integer({
          minimum: 0,
          maximum: 10,
          default: 0,
          description: "Proxies in front whose X-Forwarded-For entries are trusted; 0: none.",
        }),
      },
      { additionalProperties: false, default: {} },
    ),
    projector: Type.Object(
      {
        linger: Duration(
          "100ms",
          "How long a job's view waits for the job to settle before it is written anyway.",
        ),
        settle_wait: Duration(
          "400ms",
          "How long a job's first view may wait for the job to settle (GET reads a job without a view from the stream meanwhile); below linger it is linger.",
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    // Health, readiness and metrics of every service; not the operator API (admin_api, served
    // under /admin/v1 on server.port). Read from `admin` too, the key's former name (load.ts).
    monitoring: Type.Object(
      {
        host: Type.String({ default: "127.0.0.1" }),
        port: Type.Integer({ minimum: 0, maximum: 65535, default: 9090 }),
      },
      { additionalProperties: false, default: {} },
    ),
    nats: Type.Object(
      {
        url: Type.String({ default: "nats://127.0.0.1:4222" }),
        replicas: Type.Union([Type.Literal(1), Type.Literal(3), Type.Literal(5)], { default: 1 }),
        // Fixed when the store is created (sy_meta records it): docs/deploy.md "Choosing partitions".
        partitions: Type.Integer({
          minimum: 1,
          maximum: 256,
          default: 1,
          description: "Partitions of the event log, views and index; fixed at store creation.",
        }),
        events_max_age: Duration("30d", "Retention of the event stream, and so of idempotency."),
        duplicate_window: Duration("2m", "JetStream Nats-Msg-Id window."),
        events_max_bytes: Type.Integer({ minimum: -1, default: -1 }),
        publish_timeout: Duration("5s", "How long POST /run waits for JetStream's ack."),
        connect_timeout: Duration(
          "60s",
          "How long start-up retries an unreachable NATS before it exits non-zero.",
        ),
        auth: Type.Optional(NatsAuthConfig),
        tls: Type.Optional(NatsTlsConfig),
        manage_topology: Type.Boolean({
          default: true,
          description:
            "Create and update streams, buckets and consumers at start (the admin role); false: they must exist (switchyard setup made them).",
        }),
        inbox_prefix: Type.Optional(
          Type.String({
            pattern: "^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$",
            description:
              "Subject prefix of this connection's reply inboxes (default _INBOX); one per NATS user keeps replies private.",
          }),
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    log: Type.Object(
      {
        level: Type.Union(
          ["trace", "debug", "info", "warn", "error", "fatal", "silent"].map((l) =>
            Type.Literal(l),
          ),
          { default: "info" },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    audit: Type.Object(
      {
        checkpoint_interval: Duration("1m", "How often signed audit checkpoints are appended."),
        signing_key_pem: Type.Optional(
          Type.String({
            minLength: 1,
            description: "Ed25519 private key (PKCS#8 PEM); no key, no checkpoints.",
          }),
        ),
        key_id: Type.String({ minLength: 1, default: "switchyard-audit-1" }),
      },
      { additionalProperties: false, default: {} },
    ),
    clients: Type.Array(ClientConfig, { default: [] }),
    routes: Type.Array(RouteConfig, { default: [] }),
    callbacks: CallbacksConfig,
    // Issue 16 (shared/config/operations.ts): operators, their API, the console, the index.
    operators: Type.Array(OperatorConfig, { default: [] }),
    admin_api: AdminApiConfig,
    console: ConsoleConfig,
    index: IndexConfig,
  },
  { additionalProperties: false },
);

export type Config = Static<typeof ConfigSchema>;
/** A client as written in the config: credentials may carry retirement dates. */
export type ClientEntry = Static<typeof ClientConfig>;
/**
 * A client as services use it: only the credentials active at the moment it was looked up
 * (shared/config/clients.ts), as plain strings.
 */
export type ClientConfig = Omit<ClientEntry, "token_sha256" | "callback_secrets"> & {
  readonly token_sha256: readonly string[];
  readonly callback_secrets: readonly string[];
};
export type RouteConfig = Static<typeof RouteConfig>;
export type JwtConfig = Static<typeof JwtConfig>;
export type CallbacksConfig = Static<typeof CallbacksConfig>;
export type NatsAuthConfig = Static<typeof NatsAuthConfig>;
export type NatsTlsConfig = Static<typeof NatsTlsConfig>;
