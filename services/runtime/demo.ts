import { randomBytes } from "node:crypto";
import { hashToken } from "../../shared/auth/index.ts";
import { type Config, parseConfig } from "../../shared/config/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";

/**
 * A config for trying the hub: one client with a fresh token and callback secret, the builtin
 * echo route, and an operator (with a fresh token) for the console at /console. Callbacks may reach loopback and private addresses (a local receiver), which is
 * never the default: the start-up banner says so.
 */
export function demoConfig(
  natsUrl: string,
  port: number,
): { config: Config; token: string; callbackSecret: string; operatorToken: string } {
  const token = `sy_demo_${randomBytes(24).toString("base64url")}`;
  const operatorToken = `sy_op_${randomBytes(24).toString("base64url")}`;
  const callbackSecret = generateWebhookSecret();
  const yaml = `
server: { host: 127.0.0.1, port: ${port} }
monitoring: { host: 127.0.0.1, port: 0 }
nats: { url: "${natsUrl}" }
clients:
  - id: demo
    token_sha256: ["${hashToken(token)}"]
    routes: ["demo.*"]
    callback_secrets: ["${callbackSecret}"]
callbacks: { allow_private: true }
operators:
  - { id: demo-operator, token_sha256: ["${hashToken(operatorToken)}"], role: operator, read_payloads: true }
console: { enabled: true, secure_cookie: false }
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.sleep
    executor: { kind: builtin, name: sleep, sleep_ms: 2000 }
`;
  return { config: parseConfig(yaml, {}, "demo config"), token, callbackSecret, operatorToken };
}
