import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { runAuditVerify } from "../../services/cli/audit-command.ts";
import { runEventsCommand } from "../../services/cli/events-command.ts";
import { type RunningHub, type ServiceName, startServices } from "../../services/runtime/run.ts";
import { setupTopology } from "../../services/runtime/setup.ts";
import { hashToken } from "../../shared/auth/index.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { type Config, parseConfig } from "../../shared/config/index.ts";
import { connectHub, type HubConnection } from "../../shared/hub/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { createWorker, type Worker, workerConnectOptions } from "../../shared/worker/index.ts";
import { testIndexYaml } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { waitFor } from "../helpers/wait.ts";
import { LOOPBACK_PORTS, type Role, type RoleNats, startRoleNats } from "./nats-roles.ts";

const TOKEN = "acme-token-0123456789abcdef";
const OPERATOR = "operator-token-0123456789abcdef";
const CALLBACK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const indexYaml = testIndexYaml();

let roles: RoleNats;
const running: RunningHub[] = [];
const logs: (() => string)[] = [];
let receiver: ReturnType<typeof Bun.serve>;
const received: string[] = [];

function configFor(role: Role, extraNats: Record<string, unknown> = {}): Config {
  const yaml = `
${LOOPBACK_PORTS}
nats: ${JSON.stringify(roles.natsSection(role, extraNats))}
callbacks: { allow_private: true }
operators:
  - { id: alice, token_sha256: ["${hashToken(OPERATOR)}"], role: operator, read_payloads: true }
console: { enabled: true, secure_cookie: false }
clients:
  - id: acme
    token_sha256: ["${hashToken(TOKEN)}"]
    routes: ["demo.*"]
    callback_secrets: ["${CALLBACK_SECRET}"]
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.worker
    executor: { kind: nats }
  - key: demo.sleep
    executor: { kind: builtin, name: sleep, sleep_ms: 60000 }
${indexYaml}
`;
  return parseConfig(yaml, {}, `${role} config`);
}

async function serve(service: ServiceName): Promise<RunningHub> {
  const { logger, logs: read } = captureLogger();
  logs.push(read);
  const hub = await startServices([service], {
    config: configFor(service),
    logger,
    clock: systemClock,
    ids: randomIds,
  });
  running.push(hub);
  return hub;
}

async function connectAs(role: Role, name = role): Promise<HubConnection> {
  const { logger, logs: read } = captureLogger();
  logs.push(read);
  return connectHub(configFor(role), logger, name, { createTopology: false });
}

beforeAll(async () => {
  roles = await startRoleNats();
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      received.push(await req.text());
      return new Response(null, { status: 204 });
    },
  });
  const { logger, logs: read } = captureLogger();
  logs.push(read);
  await setupTopology({ config: configFor("admin"), logger, clock: systemClock, ids: randomIds });
});

let worker: Worker | undefined;
let workerNc: NatsConnection | undefined;

afterAll(async () => {
  await worker?.stop();
  await workerNc?.drain();
  for (const hub of running.reverse()) await hub.stop();
  receiver?.stop(true);
  await roles?.stop();
});

describe("every service under its own NATS user (mTLS, least privilege)", () => {
  let jobId = "";
  let ingressUrl = "";

  test("services start without stream-management rights against the topology setup made", async () => {
    for (const s of ["projector", "indexer", "executor", "callback"] as const) await serve(s);
    const ingress = await serve("ingress");
    ingressUrl = ingress.ingress?.url ?? "";
    expect(ingressUrl).toStartWith("http://127.0.0.1:");
  });

  test("a run is accepted, executed, called back, projected and indexed", async () => {
    const res = await fetch(`${ingressUrl}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        request_id: "roles-1",
        route: "demo.echo",
        input: "hello roles",
        callback_url: `http://127.0.0.1:${receiver.port}/cb`,
      }),
    });
    expect(res.status).toBe(202);
    jobId = ((await res.json()) as { job_id: string }).job_id;
    const view = await waitFor("the job view to be done", async () => {
      const r = await fetch(`${ingressUrl}/jobs/${jobId}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      const body = (await r.json()) as { status?: string; output?: unknown };
      return body.status === "done" ? body : undefined;
    });
    expect(view.output).toBe("hello roles");
    await waitFor("the callback", () => received.some((b) => b.includes(jobId)));
    const listed = await waitFor("the job in the index", async () => {
      const r = await fetch(`${ingressUrl}/jobs?status=done`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      const text = await r.text();
      return text.includes(jobId) ? text : undefined;
    });
    expect(listed).toContain(jobId);
  });

  const submit = async (requestId: string, route: string) => {
    const res = await fetch(`${ingressUrl}/run`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ request_id: requestId, route, input: "x" }),
    });
    expect(res.status).toBe(202);
    return ((await res.json()) as { job_id: string }).job_id;
  };
  const statusOf = async (id: string) => {
    const r = await fetch(`${ingressUrl}/jobs/${id}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return ((await r.json()) as { status?: string }).status;
  };

  test("a NATS worker under the worker user takes a task and reports it done", async () => {
    const section = roles.natsSection("worker");
    workerNc = await connect(
      workerConnectOptions({
        url: roles.nats.url,
        auth: { user: "worker", password: roles.passwords.worker },
        tls: section.tls as { ca_file: string; cert_file: string; key_file: string },
        inbox_prefix: "_INBOX_worker",
      }),
    );
    worker = createWorker({ nc: workerNc, route: "demo.worker", handler: async (t) => t.input });
    await worker.start();
    const id = await submit("roles-worker-1", "demo.worker");
    expect(
      await waitFor("the worker's job to be done", async () => (await statusOf(id)) === "done"),
    ).toBe(true);
  });

  test("a cancel goes through the ingress's and executor's users", async () => {
    const id = await submit("roles-cancel-1", "demo.sleep");
    await waitFor("the sleep job to run", async () => (await statusOf(id)) === "running");
    const res = await fetch(`${ingressUrl}/jobs/${id}/cancel`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.status).toBe(202);
    expect(
      await waitFor("the view to show the cancel", async () => (await statusOf(id)) === "error"),
    ).toBe(true);
    // The executor got the cancel notice and released the running builtin at once.
    const jsm = await jetstreamManager(roles.nats.nc);
    await waitFor("the executor to release the job", async () => {
      const info = await jsm.consumers.info("SWITCHYARD_EVENTS", "executor");
      return info.num_ack_pending === 0;
    });
  });

  test("the operator API under the ingress user: the overview, and a retry that runs", async () => {
    const admin = (path: string, init: RequestInit = {}) =>
      fetch(`${ingressUrl}/admin/v1${path}`, {
        ...init,
        headers: { authorization: `Bearer ${OPERATOR}` },
      });
    const overview = await admin("/overview");
    expect(overview.status).toBe(200);
    expect(await overview.text()).toContain("SWITCHYARD_EVENTS");
    const cancelled = await submit("roles-retry-1", "demo.sleep");
    await waitFor("the job to run", async () => (await statusOf(cancelled)) === "running");
    expect((await admin(`/jobs/${cancelled}/cancel`, { method: "POST" })).status).toBe(202);
    await waitFor("the cancel in the view", async () => (await statusOf(cancelled)) === "error");
    const retry = await admin(`/jobs/${cancelled}/retry`, { method: "POST" });
    expect(retry.status).toBe(202);
    const { job } = (await retry.json()) as { job: { job_id: string } };
    // The retry appended a run.requested under the ingress user; the executor picks it up.
    expect(
      await waitFor("the retry to run", async () => (await statusOf(job.job_id)) === "running"),
    ).toBe(true);
  });

  test("audit verify works with the auditor's read-only credential alone", async () => {
    // Every event folded into the views first: verify compares them with the stream.
    const jsm = await jetstreamManager(roles.nats.nc);
    await waitFor("the projector to catch up", async () => {
      const info = await jsm.consumers.info("SWITCHYARD_EVENTS", "projector");
      return info.num_pending === 0 && info.num_ack_pending === 0;
    });
    let out = "";
    const code = await runAuditVerify([], () => connectAs("auditor"), {
      stdout: (t) => {
        out += t;
      },
      stderr: () => {},
    });
    expect(out).toContain("0 divergences");
    expect(code).toBe(0);
  });

  test("switchyard events works with the auditor's credential alone", async () => {
    const auditor = await connectAs("auditor");
    let out = "";
    const code = await runEventsCommand(["--job", jobId], auditor, {
      stdout: (t) => {
        out += t;
      },
      stderr: () => {},
    });
    await auditor.drain();
    expect(code).toBe(0);
    expect(out).toContain("run.requested");
    expect(out).toContain("job.done");
  });

  test("no log line and no /metrics answer holds a NATS password", async () => {
    let outputs = logs.map((read) => read()).join("\n");
    for (const hub of running)
      outputs += await (await fetch(`${hub.monitoring.url}/metrics`)).text();
    // The console's page and its state, and the operator overview.
    outputs += await (await fetch(`${ingressUrl}/console/`)).text();
    outputs += await (await fetch(`${ingressUrl}/console/state`)).text();
    outputs += await (
      await fetch(`${ingressUrl}/admin/v1/overview`, {
        headers: { authorization: `Bearer ${OPERATOR}` },
      })
    ).text();
    expect(outputs).toContain("switchyard");
    for (const password of Object.values(roles.passwords)) expect(outputs).not.toContain(password);
  });

  test("no server log line reports a permissions violation of the services", () => {
    expect(roles.nats.server().output()).not.toContain("Violation");
  });
});
