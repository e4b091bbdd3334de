import { randomBytes } from "node:crypto";
import { hashToken } from "../../shared/auth/index.ts";
import { type Config, parseConfig } from "../../shared/config/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";

/**
 * A config for trying the hub: one client with a fresh token and callback secret, the builtin
 * echo route. Callbacks may reach loopback and private addresses (a local receiver), which is
 * never the default: the start-up banner says so.
 */
export function demoConfig(
  natsUrl: string,
  port: number,
): { config: Config; token: string; callbackSecret: string } {
  const token = `sy_demo_${randomBytes(24).toString("base64url")}`;
  const callbackSecret = generateWebhookSecret();
  const yaml = `
server: { host: 127.0.0.1, port: ${port} }
nats: { url: "${natsUrl}" }
clients:
  - id: demo
    token_sha256: ["${hashToken(token)}"]
    routes: ["demo.*"]
    callback_secrets: ["${callbackSecret}"]
callbacks: { allow_private: true }
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.sleep
    executor: { kind: builtin, name: sleep, sleep_ms: 2000 }
`;
  return { config: parseConfig(yaml, {}, "demo config"), token, callbackSecret };
}
