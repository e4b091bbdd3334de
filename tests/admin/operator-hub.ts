import type { ServiceName } from "../../services/runtime/run.ts";
import { hashToken } from "../../shared/auth/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { startHub, type TestClient, type TestHub } from "../helpers/hub.ts";
import type { TestNats } from "../helpers/nats.ts";

/**
 * A hub with operators, for the operator API, CLI and console tests: `alice` acts and reads
 * payloads, `olga` acts without payloads, `victor` only views. Clients `acme` and `globex`.
 * demo.echo finishes at once, demo.off is disabled (its jobs are rejected), demo.slow goes to NATS
 * workers and none runs (its jobs stay dispatched).
 */
export const OPERATOR_TOKENS = {
  alice: "op-alice-token-0123456789abcdef",
  olga: "op-olga-token-0123456789abcdef",
  victor: "op-victor-token-0123456789abcdef",
} as const;

export const CLIENT_TOKENS = {
  acme: "acme-admin-token-0123456789abcdef",
  globex: "globex-admin-token-0123456789abcdef",
} as const;

export const CALLBACK_SECRET = generateWebhookSecret();

export interface OperatorHub {
  readonly hub: TestHub;
  /** fetch of the operator API with a bearer token. */
  admin(path: string, token: string | null, init?: RequestInit): Promise<Response>;
  stop(): Promise<void>;
}

export interface OperatorHubOptions {
  readonly maxBulk?: number;
  readonly console?: boolean;
  /** More entries of `operators:`, as YAML flow mappings (e.g. an operator with a JWT). */
  readonly extraOperators?: readonly string[];
  /** Another hub's NATS: this one is then a further replica of it (with `services`). */
  readonly nats?: TestNats;
  readonly services?: readonly ServiceName[];
}

export async function startOperatorHub(options: OperatorHubOptions = {}): Promise<OperatorHub> {
  const clients: TestClient[] = [
    {
      id: "acme",
      token: CLIENT_TOKENS.acme,
      routes: ["demo.*"],
      callbackSecrets: [CALLBACK_SECRET],
    },
    {
      id: "globex",
      token: CLIENT_TOKENS.globex,
      routes: ["demo.*"],
      callbackSecrets: [CALLBACK_SECRET],
    },
  ];
  const extraOperators = (options.extraOperators ?? []).map((o) => `\n  - ${o}`).join("");
  const hub = await startHub({
    clients,
    ...(options.nats ? { nats: options.nats } : {}),
    ...(options.services ? { services: options.services } : {}),
    yaml: `
callbacks:
  allow_cidrs: ["127.0.0.1/32"]
  retry_schedule: ["100ms"]
  jitter: 0
  timeout: 2s
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.off
    enabled: false
    executor: { kind: builtin, name: echo }
  - key: demo.slow
    executor: { kind: nats }
operators:
  - { id: alice, token_sha256: ["${hashToken(OPERATOR_TOKENS.alice)}"], role: operator, read_payloads: true }
  - { id: olga, token_sha256: ["${hashToken(OPERATOR_TOKENS.olga)}"], role: operator }
  - { id: victor, token_sha256: ["${hashToken(OPERATOR_TOKENS.victor)}"], role: viewer }${extraOperators}
admin_api: { max_bulk: ${options.maxBulk ?? 1000} }
console: { enabled: ${options.console ?? true}, secure_cookie: false }
`,
  });
  return {
    hub,
    admin: (path, token, init = {}) => hub.request(`/admin/v1${path}`, { ...init, token }),
    stop: () => hub.stop(),
  };
}
