import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AckPolicy } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { type RunningHub, startServices } from "../../services/runtime/run.ts";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { parseConfig } from "../../shared/config/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { readLastEvent, SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import { type ManagedNatsServer, startNatsServer } from "../../shared/nats/index.ts";
import { captureLogger } from "../helpers/logs.ts";
import { runToEnd } from "../helpers/run.ts";
import { waitFor } from "../helpers/wait.ts";

// A store written by Switchyard 0.1 (tests/fixtures/store-v1/README.md): the current version must
// refuse it until `switchyard migrate` ran, then carry every job, callback and deadline over.

const FIXTURE = join(import.meta.dir, "../fixtures/store-v1");
const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
const TOKEN = "v1-client-token-0123456789abcdef";
const jobs = JSON.parse(await readFile(join(FIXTURE, "jobs.json"), "utf8")) as Record<
  string,
  string
>;

let dir: string;
let nats: ManagedNatsServer;
let configPath: string;
let hub: RunningHub | undefined;
const received: { port: number; body: string }[] = [];
const receivers: ReturnType<typeof Bun.serve>[] = [];

/** The fixture's receivers listen on fixed ports (its callback_urls name them). */
function listen(port: number, handler: (req: Request) => Response | Promise<Response>) {
  try {
    receivers.push(Bun.serve({ hostname: "127.0.0.1", port, fetch: handler }));
  } catch (err) {
    throw new Error(`port ${port} is taken; the v1 fixture's URLs need it free (${String(err)})`);
  }
}

async function cli(args: string[]) {
  return runToEnd([process.execPath, MAIN, ...args], {
    env: { ...process.env, SWITCHYARD_CONFIG: configPath, NATS_URL: nats.url },
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "switchyard-v1-"));
  const untar = Bun.spawnSync(["tar", "xzf", join(FIXTURE, "nats-store.tar.gz"), "-C", dir]);
  if (untar.exitCode !== 0) throw new Error(`tar failed: ${untar.stderr.toString()}`);
  nats = await startNatsServer({ storeDir: join(dir, "nats"), args: [], env: process.env });
  const yaml = `${(await readFile(join(FIXTURE, "switchyard.yaml"), "utf8")).replace(
    "NATS_URL_PLACEHOLDER",
    nats.url,
  )}\nindex: { sqlite_path: "${join(dir, "index.sqlite")}" }\n`;
  configPath = join(dir, "switchyard.yaml");
  await writeFile(configPath, yaml);
  const record = (port: number) => async (req: Request) => {
    received.push({ port, body: await req.text() });
    return new Response("ok");
  };
  for (const port of [29101, 29102, 29103]) listen(port, record(port));
  listen(29104, () => Response.json({ output: "from http" }));
});

afterAll(async () => {
  await hub?.stop();
  for (const r of receivers) r.stop(true);
  await nats?.stop("SIGKILL");
  await rm(dir, { recursive: true, force: true });
});

test("a 0.1 store is refused until `switchyard migrate`, then every job, callback and deadline carries over", async () => {
  const refused = await cli(["serve", "executor"]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain("store version 1");
  expect(refused.stderr).toContain("switchyard migrate");

  const migrated = await cli(["migrate"]);
  expect(migrated.stderr).toBe("");
  expect(migrated.code).toBe(0);
  // worker-0, worker-1 (tasks waiting for a worker) and http-async (202, never reported).
  expect(migrated.stdout).toContain("deadline timers for open jobs: 3");
  // cb-gone-0's unserved redelivery request (cb-down-0..2's retries stay parked where 0.1 left them).
  expect(migrated.stdout).toContain("redelivery requests queued: 1");
  expect(migrated.stdout).toContain("old consumers removed: watchdog, callback-redelivery");
  const again = await cli(["migrate"]);
  expect(again).toMatchObject({ code: 0, stdout: "store version 2: nothing to migrate\n" });

  const config = parseConfig(await readFile(configPath, "utf8"), {}, "v1 fixture");
  const { logger } = captureLogger();
  hub = await startServices(["ingress", "projector", "indexer", "executor", "callback"], {
    config,
    logger,
    clock: systemClock,
    ids: randomIds,
  });
  const base = hub.ingress?.url ?? "";
  const get = async (jobId: string) =>
    (await (
      await fetch(`${base}/jobs/${jobId}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      })
    ).json()) as { status: string; error?: { code: string }; callback?: { status: string } };

  // Open jobs whose deadline passed while the hub was down end now, whatever held them in 0.1.
  for (const name of ["worker-0", "worker-1", "http-async", "sleeping"]) {
    const job = await waitFor(
      `${name} to end`,
      async () => {
        const view = await get(jobs[name] ?? "");
        return view.status === "error" ? view : undefined;
      },
      { timeoutMs: 30_000 },
    );
    expect(job.error?.code).toBe("deadline_exceeded");
  }
  // Finished jobs read as they were.
  expect((await get(jobs["echo-3"] ?? "")).status).toBe("done");
  expect(await get(jobs.off ?? "")).toMatchObject({ status: "rejected" });
  expect(await get(jobs.late ?? "")).toMatchObject({ error: { code: "deadline_exceeded" } });

  // Their callbacks, and the redelivery 0.1 never served, are delivered by 0.2.
  for (const [name, port] of [
    ["worker-0", 29101],
    ["sleeping", 29101],
    ["cb-gone-0", 29103],
  ] as const) {
    await waitFor(`${name}'s callback`, () =>
      received.some((r) => r.port === port && r.body.includes(jobs[name] ?? "")),
    );
  }
  const gone = await waitFor("the redelivery to be recorded", async () => {
    const last = await readLastEvent(
      { jsm: hub?.hub.jsm as never, layout: SINGLE_PARTITION_LAYOUT },
      { client_id: "acme", job_id: jobs["cb-gone-0"] ?? "" },
      "cb",
    );
    return last?.event.type === "callback.delivered" ? last : undefined;
  });
  expect(gone.event.data).toMatchObject({ redelivery_seq: expect.any(Number) });

  // Callbacks 0.1 was retrying (next try an hour after the fixture was made, so due by now) come
  // back from the callback consumer where 0.1 parked them: each is delivered once, as attempt 2.
  for (const name of ["cb-down-0", "cb-down-1", "cb-down-2"]) {
    const delivered = await waitFor(`${name}'s retried callback`, async () => {
      const last = await readLastEvent(
        { jsm: hub?.hub.jsm as never, layout: SINGLE_PARTITION_LAYOUT },
        { client_id: "acme", job_id: jobs[name] ?? "" },
        "cb",
      );
      return last?.event.type === "callback.delivered" ? last : undefined;
    });
    expect(delivered.event.data).toMatchObject({ attempts: 2 });
    expect(
      received.filter((r) => r.port === 29102 && r.body.includes(jobs[name] ?? "")),
    ).toHaveLength(1);
  }

  // The old consumers are gone; the projector acks in rounds now. Its durable is made again when
  // the index joins its deliveries (shared/projection/runner.ts), so it may be absent for a moment.
  const consumers: string[] = [];
  for await (const c of hub.hub.jsm.consumers.list(TOPOLOGY.eventsStream)) consumers.push(c.name);
  expect(consumers).not.toContain("watchdog");
  expect(consumers).not.toContain("callback-redelivery");
  const projector = await waitFor("the projector's durable", () =>
    hub?.hub.jsm.consumers.info(TOPOLOGY.eventsStream, "projector"),
  );
  expect(projector.config.ack_policy).toBe(AckPolicy.All);

  // New work flows through the migrated store.
  const res = await fetch(`${base}/run`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ request_id: "after-migration", route: "v1.echo", input: "new" }),
  });
  expect(res.status).toBe(202);
  const { job_id } = (await res.json()) as { job_id: string };
  await waitFor("the new job", async () => (await get(job_id)).status === "done");

  // An auditor replays 0.1's and 0.2's events together: views and the signed chain verify.
  await waitFor("views to settle", async () => {
    const info = await hub?.hub.jsm.consumers.info(TOPOLOGY.eventsStream, "projector");
    return info?.num_pending === 0 && info.num_ack_pending === 0;
  });
  await Bun.sleep(300);
  const audit = await cli(["audit", "verify", "--public-key", join(FIXTURE, "audit-public.pem")]);
  expect(audit.stderr).toBe("");
  expect(audit.code).toBe(0);
  const kv = await new Kvm(hub.hub.nc).open(TOPOLOGY.jobsBucket);
  expect((await kv.get(`acme.${jobs["echo-0"]}`))?.json()).toMatchObject({ status: "done" });
}, 90_000);
