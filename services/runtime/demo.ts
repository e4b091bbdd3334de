import { randomBytes } from "node:crypto";
import { type Config, parseConfig } from "../../shared/config/index.ts";
import { hashToken } from "../ingress/index.ts";

/** A config for trying the hub: one client with a fresh token, the builtin echo route. */
export function demoConfig(natsUrl: string, port: number): { config: Config; token: string } {
  const token = `sy_demo_${randomBytes(24).toString("base64url")}`;
  const yaml = `
server: { host: 127.0.0.1, port: ${port} }
nats: { url: "${natsUrl}" }
clients:
  - id: demo
    token_sha256: ["${hashToken(token)}"]
    routes: ["demo.*"]
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.sleep
    executor: { kind: builtin, name: sleep, sleep_ms: 2000 }
`;
  return { config: parseConfig(yaml, {}, "demo config"), token };
}
