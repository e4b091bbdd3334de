import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { type Child, spawnBun, waitFinal } from "../executor/helpers.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";

// The example worker is code people copy: it must survive a NATS restart and say clearly when its
// route has no work queue, instead of crashing or waiting in silence.

const WORKER = join(import.meta.dir, "../../examples/worker/echo-worker.ts");
const CLIENT = { id: "ops", token: "ops-token-0123456789abcdef", routes: ["x.*"] };

let nats: TestNats;
let hub: TestHub;
const children: Child[] = [];

beforeAll(async () => {
  nats = await startNats();
  hub = await startHub({
    nats,
    clients: [CLIENT],
    yaml: `
routes:
  - key: x.work
    executor: { kind: nats, ack_wait: 2s, max_deliver: 10 }
`,
  });
});
afterAll(async () => {
  for (const child of children) await child.kill();
  await hub.stop();
  await nats.stop();
});

function worker(route: string): Child {
  const child = spawnBun([WORKER, "--nats", nats.url, "--route", route, "--concurrency", "2"]);
  children.push(child);
  return child;
}

const get = (path: string) => hub.request(path, { token: CLIENT.token });
let n = 0;
async function runJob(): Promise<string> {
  const res = await hub.run(
    { request_id: `ex-${n++}`, route: "x.work", input: `in-${n}` },
    CLIENT.token,
  );
  expect(res.status).toBe(202);
  return ((await res.json()) as { job_id: string }).job_id;
}

test("a route without a work queue is named, and the worker keeps waiting for it", async () => {
  const child = worker("x.missing");
  const said = await waitFor(
    "the worker to say the route has no work queue",
    () => child.output().includes("no work queue"),
    { timeoutMs: 10_000 },
  );
  expect(said).toBe(true);
  expect(child.output()).toContain("x.missing");
  expect(child.output()).toContain("kind: nats");
  expect(child.proc.exitCode).toBeNull();
  await child.kill();
});

test("a NATS restart: the worker reconnects and keeps working", async () => {
  const child = worker("x.work");
  await waitFor("the worker to be ready", () => child.output().includes("echo worker ready"));
  expect(await waitFinal(get, await runJob(), 20_000)).toMatchObject({ status: "done" });

  // A graceful restart (the server answers pulls with 409 "server shutdown"), then a crash.
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    await nats.kill(signal);
    await Bun.sleep(3_000); // long enough for pulls to fail and heartbeats to be missed
    await nats.restart();
  }
  await waitFor(
    "the hub to reconnect",
    async () => (await fetch(`${hub.running.monitoring.url}/readyz`)).ok,
    {
      timeoutMs: 15_000,
    },
  );

  const after = await runJob();
  expect(await waitFinal(get, after, 30_000)).toMatchObject({ status: "done" });
  expect(child.proc.exitCode).toBeNull();
  expect(child.output()).not.toContain("Unhandled");
});
