import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { Webhook } from "standardwebhooks";
import { webhookIdFor } from "../../services/callback/index.ts";
import { waitFor } from "../helpers/wait.ts";
import {
  type CallbackHub,
  callbackYaml,
  rid,
  SECRET_A,
  startCallbackHub,
  startReceiver,
  TOKENS,
} from "./helpers.ts";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
// Long enough that the kill lands between attempts, short enough for a test.
const SCHEDULE = Array<string>(12).fill("300ms");

let hub: CallbackHub;
let dir: string;
let configPath: string;
let child: Subprocess | undefined;
let output = "";

/** `switchyard serve callback` as a child process with its own config file. */
function spawnCallbackService(): Subprocess<"ignore", "pipe", "pipe"> {
  const proc = Bun.spawn([process.execPath, MAIN, "serve", "callback"], {
    env: { ...process.env, SWITCHYARD_CONFIG: configPath, NATS_URL: hub.nats.url },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  for (const stream of [proc.stdout, proc.stderr]) {
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of stream) output += decoder.decode(chunk);
    })();
  }
  child = proc;
  return proc;
}

beforeAll(async () => {
  hub = await startCallbackHub({ inProcessCallback: false, schedule: SCHEDULE });
  dir = await mkdtemp(join(tmpdir(), "switchyard-callback-"));
  configPath = join(dir, "switchyard.yaml");
  await writeFile(configPath, callbackYaml(hub.nats.url, SCHEDULE));
});
afterAll(async () => {
  child?.kill("SIGKILL");
  await child?.exited;
  await hub.stop();
  await rm(dir, { recursive: true, force: true });
});

test("a callback whose receiver was down is delivered after the callback service and NATS restart", async () => {
  // Reserve a port, then leave it closed: the receiver is down.
  const probe = startReceiver();
  const port = probe.port;
  await probe.stop();

  let proc = spawnCallbackService();
  const res = await hub.run(TOKENS.acme, {
    request_id: rid(),
    route: "demo.echo",
    input: "survive",
    callback_url: `http://127.0.0.1:${port}/late`,
  });
  expect(res.status).toBe(202);
  const { job_id: jobId } = (await res.json()) as { job_id: string };
  await hub.finish("acme", jobId, { output: "survive" });

  await waitFor(
    "a failed attempt against the closed port",
    async () => {
      const events = await hub.cbEvents("acme", jobId);
      return events.some(
        (e) => e.type === "callback.attempted" && e.data.error_class === "network",
      );
    },
    { timeoutMs: 20_000 },
  );
  proc.kill("SIGKILL");
  await proc.exited;
  await hub.nats.kill();
  await hub.nats.restart();

  // The hub's own connection reconnects on its schedule; read once it answers again.
  const before = await waitFor("the hub to reconnect", () => hub.cbEvents("acme", jobId), {
    timeoutMs: 15_000,
  });
  const failedSoFar = before.filter((e) => e.type === "callback.attempted").length;
  await using receiver = startReceiver({}, port);
  proc = spawnCallbackService();

  const events = await waitFor(
    `delivery after the restart (child output: ${output.slice(-500)})`,
    async () => {
      const list = await hub.cbEvents("acme", jobId);
      return list.at(-1)?.type === "callback.delivered" ? list : undefined;
    },
    { timeoutMs: 30_000 },
  );
  // No attempt is lost or repeated across the kill: the failed ones before it, then the one that
  // delivered (recorded in callback.delivered itself).
  const tries = events.filter((e) => e.type === "callback.attempted");
  expect(tries.length).toBe(failedSoFar);
  const delivered = events.filter((e) => e.type === "callback.delivered");
  expect(delivered).toHaveLength(1);
  expect(delivered[0]).toMatchObject({ data: { attempts: failedSoFar + 1 } });
  const [request] = receiver.on("/late");
  expect(request?.headers["webhook-id"]).toBe(webhookIdFor(jobId));
  const body = new Webhook(SECRET_A).verify(request?.body ?? "", request?.headers ?? {});
  expect(body).toMatchObject({ data: { job_id: jobId, status: "done", output: "survive" } });
  expect(output).not.toContain(SECRET_A);
}, 60_000);
