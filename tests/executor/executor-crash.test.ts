import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { hubYaml, startHub, type TestHub } from "../helpers/hub.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";
import { type Child, jobEvents, spawnBun, startTaskServer, type TaskServer } from "./helpers.ts";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
const CLIENT = { id: "ops", token: "ops-token-0123456789abcdef", routes: ["x.*"] };
const JOBS = 30;

let nats: TestNats;
let hub: TestHub;
let server: TaskServer;
let dir: string;
let configPath: string;
const children: Child[] = [];

beforeAll(async () => {
  nats = await startNats();
  // A slow executor, so the kill lands while tasks are in flight.
  server = startTaskServer(async (task) => {
    await Bun.sleep(150);
    return Response.json({ output: task.json.input });
  });
  const extra = `
monitoring: { host: 127.0.0.1, port: 0 }
routes:
  - key: x.slow
    concurrency: 4
    executor:
      kind: http
      url: ${server.url}
      secret: "${generateWebhookSecret()}"
      timeout: 5s
      retry_backoff: [100ms]
`;
  dir = await mkdtemp(join(tmpdir(), "switchyard-executor-crash-"));
  configPath = join(dir, "switchyard.yaml");
  await writeFile(configPath, hubYaml(nats.url, [CLIENT], extra));
  hub = await startHub({
    nats,
    clients: [CLIENT],
    yaml: extra,
    services: ["ingress", "projector"],
  });
});
afterAll(async () => {
  for (const child of children) await child.kill();
  await hub.stop();
  await server.stop();
  await nats.stop();
  await rm(dir, { recursive: true, force: true });
});

function startExecutor(): Child {
  const child = spawnBun([MAIN, "serve", "executor"], {
    SWITCHYARD_CONFIG: configPath,
    NATS_URL: nats.url,
    SWITCHYARD_LOG_LEVEL: "info",
  });
  children.push(child);
  return child;
}

const isFinal = (status: unknown) => ["done", "error", "rejected"].includes(String(status));

test("the executor killed mid-stream and restarted: every job ends with exactly one outcome; at most the route's 4 tasks in flight at the kill are POSTed again", async () => {
  const jobIds: string[] = [];
  for (let i = 0; i < JOBS; i++) {
    const res = await hub.run(
      { request_id: `burst-${i}`, route: "x.slow", input: `n${i}` },
      CLIENT.token,
    );
    expect(res.status).toBe(202);
    jobIds.push(((await res.json()) as { job_id: string }).job_id);
  }
  const statuses = async () =>
    Promise.all(
      jobIds.map(async (id) => {
        const res = await hub.request(`/jobs/${id}`, { token: CLIENT.token });
        return ((await res.json()) as { status: string }).status;
      }),
    );

  const first = startExecutor();
  await waitFor(
    "a few jobs to finish",
    async () => (await statuses()).filter(isFinal).length >= 4,
    {
      timeoutMs: 20_000,
    },
  );
  await first.kill();
  const doneBeforeRestart = (await statuses()).filter(isFinal).length;
  expect(doneBeforeRestart).toBeLessThan(JOBS);

  startExecutor();
  await waitFor(
    "every job to reach a final status",
    async () => (await statuses()).every(isFinal),
    {
      timeoutMs: 45_000,
      intervalMs: 200,
    },
  );

  let sentTwice = 0;
  for (const [i, id] of jobIds.entries()) {
    const events = await jobEvents(nats.nc, CLIENT.id, id);
    const types = events.map((e) => e.type);
    // Exactly one outcome, and nothing before it: a POST cut short by the crash is sent again
    // as attempt 1 (same webhook-id), recording nothing.
    expect(types).toEqual(["job.done"]);
    expect(events[0]?.data).toMatchObject({ output: `n${i}` });
    const posts = server.forJob(id);
    expect(posts.length).toBeGreaterThanOrEqual(1);
    expect(new Set(posts.map((p) => p.headers["webhook-id"]))).toEqual(new Set([id]));
    if (posts.length > 1) sentTwice++;
  }
  // Only tasks in flight at the kill can have been sent again (the route's cap is 4).
  expect(sentTwice).toBeLessThanOrEqual(4);
}, 90_000);
