import * as hubErrors from "../../shared/errors/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { startHub, type TestClient, type TestHub } from "../helpers/hub.ts";
import { type FaultProxy, startFaultProxy } from "./fault-proxy.ts";

/**
 * The hub every SDK test talks to (TypeScript, the packaged SDK on Node, Bun and Deno, Python):
 * a real hub with all its services on a private nats-server, and the fault proxy in front of it.
 * `acme` signs callbacks with two secrets (a rotation in progress); `limited` may make one request
 * per minute, so its second one is a real 429.
 */
export interface SdkHub extends AsyncDisposable {
  readonly hub: TestHub;
  readonly proxy: FaultProxy;
  readonly baseUrl: string;
  readonly clients: Readonly<Record<"acme" | "globex" | "limited", SdkClient>>;
  stop(): Promise<void>;
}

export interface SdkClient {
  readonly token: string;
  readonly secrets: readonly string[];
}

/**
 * Routes: demo.echo finishes at once, demo.sleep after 200 ms; demo.slow goes to NATS workers and
 * no worker runs, so its jobs stay dispatched (and a stopping hub has nothing to wait for).
 */
const ROUTES = `
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.sleep
    executor: { kind: builtin, name: sleep, sleep_ms: 200 }
  - key: demo.slow
    executor: { kind: nats }
callbacks:
  allow_cidrs: ["127.0.0.1/32"]
  retry_schedule: ["100ms", "200ms"]
  jitter: 0
  timeout: 2s
`;

export async function startSdkHub(): Promise<SdkHub> {
  const acmeSecrets = [generateWebhookSecret(), generateWebhookSecret(24)];
  const clients: TestClient[] = [
    {
      id: "acme",
      token: "acme-sdk-token-0123456789abcdef",
      routes: ["demo.*"],
      callbackSecrets: acmeSecrets,
    },
    { id: "globex", token: "globex-sdk-token-0123456789abcdef", routes: ["demo.*"] },
    { id: "limited", token: "limited-sdk-token-0123456789abcdef", runsPerMinute: 1 },
  ];
  const hub = await startHub({ clients, yaml: ROUTES });
  const proxy = startFaultProxy(hub.baseUrl);
  const client = (index: number, secrets: readonly string[] = []) => ({
    token: clients[index]?.token ?? "",
    secrets,
  });
  const stop = async () => {
    await proxy.stop();
    await hub.stop();
  };
  return {
    hub,
    proxy,
    baseUrl: hub.baseUrl,
    clients: { acme: client(0, acmeSecrets), globex: client(1), limited: client(2) },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** Records every callback POSTed to it, raw body and headers, on 127.0.0.1. */
export function startReceiver() {
  const received: { path: string; body: string; headers: Record<string, string> }[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      received.push({
        path: new URL(req.url).pathname,
        body: await req.text(),
        headers: Object.fromEntries(req.headers),
      });
      return new Response(null, { status: 204 });
    },
  });
  return {
    url: (path: string) => `http://127.0.0.1:${server.port}${path}`,
    on: (path: string) => received.filter((r) => r.path === path),
    stop: () => server.stop(true),
  };
}

/** Every problem code the hub can send, with its status, read off the classes in shared/errors. */
export function hubProblemCodes(): Map<string, number> {
  const codes = new Map<string, number>();
  for (const value of Object.values(hubErrors)) {
    if (typeof value !== "function" || !(value.prototype instanceof hubErrors.SwitchyardError)) {
      continue;
    }
    const Concrete = value as unknown as new (init: {
      detail: string;
    }) => hubErrors.SwitchyardError;
    const error = new Concrete({ detail: "probe" });
    codes.set(error.code, error.status);
  }
  return codes;
}
