import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFile } from "node:fs/promises";
import { Webhook } from "standardwebhooks";
import { hashToken } from "../../shared/auth/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { startUp, type UpProcess } from "../helpers/up-process.ts";
import { waitFor } from "../helpers/wait.ts";

// Rotation without a restart, against a running `switchyard up`: new token hashes and callback
// secrets take effect on a changed config file and on SIGHUP, old ones retire by their date.
// Receivers verify with the standardwebhooks package and know only one secret each.

const TOKEN_A = "sy_acme_old-token-0123456789abcdef";
const TOKEN_B = "sy_acme_new-token-0123456789abcdef";
const OLD = generateWebhookSecret();
const NEW = generateWebhookSecret();

interface Receiver {
  readonly url: string;
  /** job id (from the payload) → whether this receiver could verify the delivery. */
  readonly seen: Map<string, boolean>;
  stop(): void;
}

/** A callback receiver that knows exactly one secret. */
function receiver(secret: string): Receiver {
  const seen = new Map<string, boolean>();
  const webhook = new Webhook(secret);
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = await req.text();
      const headers = Object.fromEntries(req.headers);
      let verified = true;
      try {
        webhook.verify(body, headers);
      } catch {
        verified = false;
      }
      const payload = JSON.parse(body) as { data?: { job_id?: string } };
      seen.set(payload.data?.job_id ?? "", verified);
      return new Response(null, { status: verified ? 204 : 401 });
    },
  });
  return { url: `http://127.0.0.1:${server.port}/hook`, seen, stop: () => server.stop(true) };
}

let nats: TestNats;
let up: UpProcess;
let base = "";
let oldOnly: Receiver;
let newOnly: Receiver;

function configYaml(tokens: string, secrets: string): string {
  return `
server: { host: 127.0.0.1, port: 0 }
monitoring: { host: 127.0.0.1, port: 0 }
log: { level: info }
callbacks: { allow_private: true }
clients:
  - id: acme
    routes: ["demo.*"]
    token_sha256: ${tokens}
    callback_secrets: ${secrets}
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
`;
}

const logLines = () => up.logLines();

let reloads = 0;
async function rewriteAndWait(yaml: string, signal?: "SIGHUP"): Promise<void> {
  const before = logLines().filter((l) => l.msg === "configuration reloaded").length;
  await writeFile(up.configFile, yaml);
  if (signal) up.proc.kill(signal);
  await waitFor(
    "the configuration to be reloaded",
    () => logLines().filter((l) => l.msg === "configuration reloaded").length > before,
    { timeoutMs: 15_000 },
  );
  reloads++;
}

let n = 0;
async function runWithCallback(token: string, to: Receiver): Promise<Response> {
  return fetch(`${base}/run`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({
      request_id: `rot-${n++}`,
      route: "demo.echo",
      input: "x",
      callback_url: to.url,
    }),
  });
}

/** Runs a job with a callback to `to` and returns whether `to` could verify its delivery. */
async function delivered(token: string, to: Receiver): Promise<boolean> {
  const res = await runWithCallback(token, to);
  expect(res.status).toBe(202);
  const { job_id } = (await res.json()) as { job_id: string };
  const seen = await waitFor(
    "the callback to arrive",
    () => (to.seen.has(job_id) ? { verified: to.seen.get(job_id) } : undefined),
    { timeoutMs: 20_000 },
  );
  return seen.verified === true;
}

beforeAll(async () => {
  nats = await startNats();
  oldOnly = receiver(OLD);
  newOnly = receiver(NEW);
  up = await startUp({
    natsUrl: nats.url,
    yaml: configYaml(`["${hashToken(TOKEN_A)}"]`, `["${OLD}"]`),
    prefix: "switchyard-rotation-",
  });
  base = await up.listening();
});

afterAll(async () => {
  await up?.stop();
  oldOnly?.stop();
  newOnly?.stop();
  await nats?.stop();
});

describe("credential rotation without a restart", () => {
  test("before: the old token and the old secret", async () => {
    expect(await delivered(TOKEN_A, oldOnly)).toBe(true);
    expect(await delivered(TOKEN_A, newOnly)).toBe(false);
    expect((await runWithCallback(TOKEN_B, oldOnly)).status).toBe(401);
  });

  test("a changed file: both secrets sign, so receivers with either one verify; both tokens work", async () => {
    const retireA = new Date(Date.now() + 8_000).toISOString();
    await rewriteAndWait(
      configYaml(
        `["${hashToken(TOKEN_B)}", { sha256: "${hashToken(TOKEN_A)}", retire_at: "${retireA}" }]`,
        `["${NEW}", { secret: "${OLD}", retire_at: "2099-01-01T00:00:00Z" }]`,
      ),
    );
    expect(await delivered(TOKEN_B, oldOnly)).toBe(true);
    expect(await delivered(TOKEN_B, newOnly)).toBe(true);
    expect(await delivered(TOKEN_A, newOnly)).toBe(true);
  });

  test("the old token retires at its date, without a reload", async () => {
    const line = logLines().filter((l) => l.msg === "configuration reloaded").length;
    await waitFor(
      "token A to retire",
      async () => (await runWithCallback(TOKEN_A, newOnly)).status === 401,
      { timeoutMs: 15_000 },
    );
    expect(logLines().filter((l) => l.msg === "configuration reloaded").length).toBe(line);
    expect((await runWithCallback(TOKEN_B, newOnly)).status).toBe(202);
  });

  test("SIGHUP: the old secret is gone; a receiver that knows only it can no longer verify", async () => {
    await rewriteAndWait(configYaml(`["${hashToken(TOKEN_B)}"]`, `["${NEW}"]`), "SIGHUP");
    expect(
      logLines().some((l) => l.msg === "reloading configuration" && l.reason === "SIGHUP"),
    ).toBe(true);
    expect(await delivered(TOKEN_B, oldOnly)).toBe(false);
    expect(await delivered(TOKEN_B, newOnly)).toBe(true);
  });

  test("an invalid file changes nothing and says why", async () => {
    await writeFile(up.configFile, configYaml(`["not-a-hash"]`, `["whsec_short"]`));
    up.proc.kill("SIGHUP");
    const line = await waitFor(
      "the refusal",
      () =>
        logLines().find(
          (l) => l.msg === "reloaded configuration is invalid; the running one stays",
        ),
      { timeoutMs: 15_000 },
    );
    expect(JSON.stringify(line.issues)).toContain("clients[0].token_sha256[0]");
    expect(JSON.stringify(line)).not.toContain(NEW.slice(6));
    expect((await runWithCallback(TOKEN_B, newOnly)).status).toBe(202);
    expect(reloads).toBe(2);
  });
});
