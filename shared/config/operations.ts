import { type Static, Type } from "@sinclair/typebox";
import { DURATION_PATTERN } from "./duration.ts";

/*
 * Config of issue 16: operator credentials and roles, the operator API, the web console and the
 * search index (docs/config.md). Kept apart from schema.ts; ConfigSchema includes these sections.
 */

const Duration = (defaultValue: string, description: string) =>
  Type.String({ pattern: DURATION_PATTERN, default: defaultValue, description });

/** Operator ids travel in events (cancelled_by, requested_by): the same safe text as client ids. */
export const OPERATOR_ID_PATTERN = "^[A-Za-z0-9_.@-]{1,64}$";

/** One operator: credentials that are not client tokens, and a role. */
export const OperatorConfig = Type.Object(
  {
    id: Type.String({ pattern: OPERATOR_ID_PATTERN }),
    token_sha256: Type.Array(Type.String({ pattern: "^[0-9a-f]{64}$" }), {
      default: [],
      uniqueItems: true,
    }),
    jwt: Type.Optional(
      Type.Object(
        {
          issuer: Type.String({ minLength: 1 }),
          audience: Type.String({ minLength: 1 }),
          subject: Type.Optional(Type.String({ minLength: 1 })),
          jwks_url: Type.Optional(Type.String({ pattern: "^https?://" })),
          public_key_pem: Type.Optional(Type.String({ minLength: 1 })),
          algorithms: Type.Array(
            Type.Union(
              ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"].map(
                (a) => Type.Literal(a),
              ),
            ),
            { minItems: 1, uniqueItems: true },
          ),
          clock_tolerance_sec: Type.Integer({ minimum: 0, maximum: 300, default: 30 }),
        },
        { additionalProperties: false },
      ),
    ),
    role: Type.Union([Type.Literal("viewer"), Type.Literal("operator")], {
      description: "viewer reads; operator also cancels, retries and redelivers.",
    }),
    read_payloads: Type.Boolean({
      default: false,
      description: "May see run input and job output (never shown otherwise).",
    }),
  },
  { additionalProperties: false },
);

export const AdminApiConfig = Type.Object(
  {
    max_bulk: Type.Integer({
      minimum: 1,
      maximum: 100_000,
      default: 1_000,
      description: "Most jobs one bulk action (callback redelivery by filter) may touch.",
    }),
  },
  { additionalProperties: false, default: {} },
);

export const ConsoleConfig = Type.Object(
  {
    enabled: Type.Boolean({ default: false, description: "Serve the web console." }),
    path: Type.String({ pattern: "^/[a-z0-9_-]{1,32}$", default: "/console" }),
    session_ttl: Duration("12h", "How long a console login lasts."),
    secure_cookie: Type.Boolean({
      default: true,
      description: "Mark the session cookie Secure (HTTPS only); false for plain HTTP on loopback.",
    }),
  },
  { additionalProperties: false, default: {} },
);

export const IndexConfig = Type.Object(
  {
    enabled: Type.Boolean({ default: true, description: "Build and serve the search index." }),
    backend: Type.Union([Type.Literal("sqlite"), Type.Literal("postgres")], { default: "sqlite" }),
    sqlite_path: Type.String({ minLength: 1, default: ".data/index.sqlite" }),
    postgres_url: Type.Optional(Type.String({ pattern: "^postgres(ql)?://" })),
    linger: Duration(
      "100ms",
      "How long a job's row waits for the job to settle before it is written.",
    ),
  },
  { additionalProperties: false, default: {} },
);

export type OperatorConfig = Static<typeof OperatorConfig>;
export type AdminApiConfig = Static<typeof AdminApiConfig>;
export type ConsoleConfig = Static<typeof ConsoleConfig>;
export type IndexConfig = Static<typeof IndexConfig>;

interface OperationsSections {
  readonly operators: readonly OperatorConfig[];
  readonly index: IndexConfig;
  /** Hashes as written: plain, or with a retirement date. */
  readonly clients: readonly {
    readonly token_sha256: readonly (string | { readonly sha256: string })[];
  }[];
}

/** Checks JSON Schema cannot say: unique ids, a credential each, no token shared with a client. */
export function operationsIssues(config: OperationsSections): { key: string; message: string }[] {
  const issues: { key: string; message: string }[] = [];
  const clientHashes = new Set(
    config.clients.flatMap((c) =>
      c.token_sha256.map((entry) => (typeof entry === "string" ? entry : entry.sha256)),
    ),
  );
  const seen = new Map<string, number>();
  config.operators.forEach((op, i) => {
    const earlier = seen.get(op.id);
    if (earlier !== undefined) {
      issues.push({
        key: `operators[${i}].id`,
        message: `duplicate operator id (also operators[${earlier}])`,
      });
    }
    seen.set(op.id, i);
    if (op.token_sha256.length === 0 && op.jwt === undefined) {
      issues.push({ key: `operators[${i}]`, message: "needs token_sha256 or jwt to authenticate" });
    }
    if (op.jwt && !op.jwt.jwks_url === !op.jwt.public_key_pem) {
      issues.push({
        key: `operators[${i}].jwt`,
        message: "set exactly one of jwks_url or public_key_pem",
      });
    }
    op.token_sha256.forEach((hash, j) => {
      if (clientHashes.has(hash)) {
        issues.push({
          key: `operators[${i}].token_sha256[${j}]`,
          message: "is also a client's token: operator credentials must not be client tokens",
        });
      }
    });
  });
  if (config.index.backend === "postgres" && config.index.postgres_url === undefined) {
    issues.push({
      key: "index.postgres_url",
      message: "is required when index.backend is postgres",
    });
  }
  return issues;
}

/**
 * The operators of the running configuration. Lookups see the list of the last reload (SIGHUP or
 * a changed file), so a removed operator's credentials and console sessions stop working at once.
 */
export interface OperatorDirectory {
  operator(id: string): OperatorConfig | undefined;
  /** Every configured operator, as written. */
  entries(): readonly OperatorConfig[];
  replace(entries: readonly OperatorConfig[]): void;
}

export function createOperatorDirectory(initial: readonly OperatorConfig[]): OperatorDirectory {
  let all = initial;
  let byId = new Map(initial.map((o) => [o.id, o]));
  return {
    operator: (id) => byId.get(id),
    entries: () => all,
    replace(entries) {
      all = entries;
      byId = new Map(entries.map((o) => [o.id, o]));
    },
  };
}
