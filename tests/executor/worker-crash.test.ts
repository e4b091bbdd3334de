import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";
import { type Child, eventTypes, spawnBun, waitFinal } from "./helpers.ts";

const WORKER = join(import.meta.dir, "../../examples/worker/echo-worker.ts");
const CLIENT = { id: "ops", token: "ops-token-0123456789abcdef", routes: ["x.*"] };

let hub: TestHub;
const children: Child[] = [];

beforeAll(async () => {
  hub = await startHub({
    clients: [CLIENT],
    yaml: `
routes:
  - key: x.work
    executor: { kind: nats, ack_wait: 1s, max_deliver: 5 }
`,
  });
});
afterAll(async () => {
  for (const child of children) await child.kill();
  await hub.stop();
});

function startWorker(delayMs: number): Child {
  const child = spawnBun([
    WORKER,
    "--nats",
    hub.nats.url,
    "--route",
    "x.work",
    "--concurrency",
    "1",
    "--delay-ms",
    String(delayMs),
  ]);
  children.push(child);
  return child;
}

test("a worker killed mid-task: the task is redelivered to a second worker and done once", async () => {
  const first = startWorker(120_000);
  await waitFor("the first worker to be ready", () => first.output().includes("echo worker ready"));
  const res = await hub.run(
    { request_id: `crash-${Date.now()}`, route: "x.work", input: "survive" },
    CLIENT.token,
  );
  expect(res.status).toBe(202);
  const { job_id: jobId } = (await res.json()) as { job_id: string };
  const get = (path: string) => hub.request(path, { token: CLIENT.token });

  await waitFor("the first worker to start the task", () =>
    first.output().includes(`"job_id":"${jobId}"`),
  );
  await waitFor("the job to be running", async () =>
    (await eventTypes(hub.nats.nc, CLIENT.id, jobId)).includes("job.running"),
  );
  await first.kill();

  const second = startWorker(0);
  expect(await waitFinal(get, jobId, 20_000)).toMatchObject({ status: "done", output: "survive" });
  expect(second.output()).toContain(`"job_id":"${jobId}","delivery":2`);
  const types = await eventTypes(hub.nats.nc, CLIENT.id, jobId);
  expect(types).toEqual(["job.dispatched", "job.running", "job.running", "job.done"]);
});
