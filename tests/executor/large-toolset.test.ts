import { afterAll, beforeAll, expect, test } from "bun:test";
import { openToolSetStore } from "../../shared/tools/index.ts";
import { createWorker, type Worker } from "../../shared/worker/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";
import { validTool } from "../tools/helpers.ts";

// A route's tool set larger than NATS's max_payload still reaches the executor: a queued task
// carries a reference to it (`tool_set`), and the NATS worker SDK and the HTTP dispatcher read the
// set before they run the task.

const CLIENT = { id: "acme", token: "acme-token-0123456789abcdef", routes: ["t.*"] };
const SECRET = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
let hub: TestHub;
let worker: Worker;
const seenByHttp: number[] = [];
const http = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const task = (await req.json()) as { tools?: unknown[] };
    seenByHttp.push(task.tools?.length ?? -1);
    return Response.json({ output: task.tools?.length ?? 0 });
  },
});

beforeAll(async () => {
  hub = await startHub({
    clients: [CLIENT],
    yaml: `
routes:
  - key: t.worker
    tool_set: big
    executor: { kind: nats }
  - key: t.http
    tool_set: big
    concurrency: 1
    executor: { kind: http, url: "http://127.0.0.1:${http.port}/", secret: "${SECRET}" }
`,
  });
  const tools = Array.from({ length: 40 }, (_, i) =>
    validTool({
      name: `tool_${i}`,
      inputSchema: {
        type: "object",
        properties: { id: { type: "string", enum: ["x".repeat(60_000)] } },
      },
    }),
  );
  const store = await openToolSetStore(hub.nats.nc);
  const pointer = await store.publish("big", { tools, diagnostics: [] } as never);
  expect(pointer.bytes).toBeGreaterThan(2 * (hub.nats.nc.info?.max_payload ?? 0));
  worker = createWorker({
    nc: hub.nats.nc,
    route: "t.worker",
    handler: async (task) => task.tools?.length ?? -1,
  });
  await worker.start();
});

afterAll(async () => {
  await worker.stop();
  await hub.stop();
  http.stop(true);
});

async function run(
  route: string,
  requestId: string,
): Promise<{ status: string; output?: unknown }> {
  const res = await hub.run({ request_id: requestId, route, input: "x" }, CLIENT.token);
  expect(res.status).toBe(202);
  const { job_id } = (await res.json()) as { job_id: string };
  return waitFor(`${route} to finish`, async () => {
    const view = (await (await hub.request(`/jobs/${job_id}`, { token: CLIENT.token })).json()) as {
      status: string;
      output?: unknown;
    };
    return ["done", "error", "rejected"].includes(view.status) ? view : undefined;
  });
}

test("a NATS worker gets a tool set above max_payload through the task's reference", async () => {
  expect(await run("t.worker", "w1")).toMatchObject({ status: "done", output: 40 });
});

test("an HTTP executor gets it in the POST, also when the task waited in the route's queue", async () => {
  // Concurrency 1: the second and third runs find the route busy and go through its queue.
  const results = await Promise.all(["h1", "h2", "h3"].map((id) => run("t.http", id)));
  for (const r of results) expect(r).toMatchObject({ status: "done", output: 40 });
  expect(seenByHttp).toEqual([40, 40, 40]);
});
