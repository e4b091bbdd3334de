/**
 * A hub of 4 partitions on one nats-server (issue 27): runs are accepted on every partition's
 * stream, executed, projected into their partition's view bucket, and found by GET and cancel
 * from the job id alone; a start with a different nats.partitions is refused naming the key.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { exportPKCS8, exportSPKI, generateKeyPair } from "jose";
import { hashToken } from "../../shared/auth/index.ts";
import { parseConfig } from "../../shared/config/index.ts";
import { connectHub } from "../../shared/hub/index.ts";
import { createEventLayout } from "../../shared/jobs/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { createWorker, type Worker } from "../../shared/worker/index.ts";
import { startHub, type TestHub } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { runToEnd } from "../helpers/run.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = "acme-token-0123456789abcdef";
const ALICE = "op-alice-token-0123456789abcdef";
/** Callbacks received, by job id. */
const called = new Map<string, number>();
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(request) {
    const body = (await request.json()) as { job_id?: string; data?: { job_id?: string } };
    const id = body.job_id ?? body.data?.job_id ?? "";
    called.set(id, (called.get(id) ?? 0) + 1);
    return new Response("ok");
  },
});
const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
const keys = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });

/** Runs the CLI against the hub's NATS, with no config file (as an auditor would). */
async function cli(args: string[]) {
  return runToEnd([process.execPath, MAIN, ...args], {
    env: { ...process.env, NATS_URL: hub.nats.url, SWITCHYARD_CONFIG: "" },
  });
}
const P = 4;
const ROUTES = `
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.long
    executor: { kind: builtin, name: sleep, sleep_ms: 30000 }
  - key: demo.worker
    executor: { kind: nats }
callbacks: { allow_cidrs: ["127.0.0.1/32"], retry_schedule: ["100ms"], jitter: 0, timeout: 2s }
operators:
  - { id: alice, token_sha256: ["${hashToken(ALICE)}"], role: operator, read_payloads: true }
audit: { checkpoint_interval: 1h, signing_key_pem: ${JSON.stringify(await exportPKCS8(keys.privateKey))} }
`;

let hub: TestHub;
let worker: Worker;

beforeAll(async () => {
  hub = await startHub({
    clients: [
      { id: "acme", token: ACME, routes: ["demo.*"], callbackSecrets: [generateWebhookSecret()] },
    ],
    yaml: ROUTES,
    natsOptions: { partitions: P },
  });
  worker = createWorker({
    nc: hub.nats.nc,
    route: "demo.worker",
    handler: async (task) => task.input.toUpperCase(),
  });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await hub?.stop();
  receiver.stop(true);
});

describe("a hub of 4 partitions", () => {
  test("runs spread over all 4 streams, end done, called back once, listed; GET and the operator API find each by id", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      const res = await hub.run(
        {
          request_id: `r-${i}`,
          route: "demo.echo",
          input: "x",
          callback_url: `http://127.0.0.1:${receiver.port}/cb`,
        },
        ACME,
      );
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as { job_id: string }).job_id);
    }
    const jsm = await jetstreamManager(hub.nats.nc);
    const layout = createEventLayout(P);
    const runs: number[] = [];
    for (let p = 0; p < P; p++) {
      const info = await jsm.streams.info(layout.stream(p), {
        subjects_filter: layout.filters.kind(p, "run"),
      });
      runs.push(Object.keys(info.state.subjects ?? {}).length);
    }
    expect(runs.reduce((a, b) => a + b, 0)).toBe(40);
    for (const count of runs) expect(count).toBeGreaterThan(0);
    await expect(jsm.streams.info("SWITCHYARD_EVENTS")).rejects.toThrow();
    for (const id of ids) {
      await waitFor(`${id} done`, async () => {
        const res = await hub.request(`/jobs/${id}`, { token: ACME });
        return res.status === 200 && ((await res.json()) as { status: string }).status === "done";
      });
    }
    // The views are in their partition's bucket. Waited for: GET answers from the stream while a
    // view is not written yet (the projector's rounds of 4 partitions are paced together).
    let views: number[] = [];
    await waitFor("every view in its partition's bucket", async () => {
      views = [];
      for (let p = 0; p < P; p++) {
        const info = await jsm.streams.info(`KV_${layout.viewBucket(p)}`);
        views.push(info.state.messages);
      }
      return views.every((n, p) => n >= (runs[p] ?? 0));
    });
    expect(views).toEqual(runs);
    // Every job is called back once, indexed and listed.
    await waitFor("every callback", () => ids.every((id) => called.has(id)));
    for (const id of ids) expect(called.get(id)).toBe(1);
    await waitFor("every job listed", async () => {
      const res = await hub.request("/jobs?limit=100", { token: ACME });
      const listed = new Set(
        ((await res.json()) as { jobs: { job_id: string }[] }).jobs.map((j) => j.job_id),
      );
      return ids.every((id) => listed.has(id));
    });
    // The operator API finds a job of any partition from its id.
    for (const id of ids.slice(0, 8)) {
      const res = await hub.request(`/admin/v1/jobs/${id}`, { token: ALICE });
      expect(res.status).toBe(200);
    }
    // A repeat of a request lands on the same job (idempotency per partition).
    const again = await hub.run(
      {
        request_id: "r-7",
        route: "demo.echo",
        input: "x",
        callback_url: `http://127.0.0.1:${receiver.port}/cb`,
      },
      ACME,
    );
    expect(((await again.json()) as { job_id: string }).job_id).toBe(ids[7] as string);
  });

  test("a NATS worker writes the status of jobs of every partition (the task says the count)", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await hub.run(
        { request_id: `w-${i}`, route: "demo.worker", input: `in${i}` },
        ACME,
      );
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as { job_id: string }).job_id);
    }
    const layout = createEventLayout(P);
    expect(new Set(ids.map((id) => layout.partitionOf({ job_id: id }))).size).toBeGreaterThan(1);
    for (const id of ids) {
      await waitFor(`${id} done by the worker`, async () => {
        const res = await hub.request(`/jobs/${id}`, { token: ACME });
        return ((await res.json()) as { status: string }).status === "done";
      });
    }
  });

  test("cancel and the operator's retry find the job's partition from its id", async () => {
    const res = await hub.run({ request_id: "long-1", route: "demo.long", input: "x" }, ACME);
    const { job_id } = (await res.json()) as { job_id: string };
    const cancel = await hub.request(`/jobs/${job_id}/cancel`, { method: "POST", token: ACME });
    expect([200, 202]).toContain(cancel.status);
    await waitFor("cancelled", async () => {
      const got = await hub.request(`/jobs/${job_id}`, { token: ACME });
      const body = (await got.json()) as { status: string; error?: { code: string } };
      return body.status === "error" && body.error?.code === "cancelled";
    });
    // The operator API retries it from its id: a new job, in its own partition.
    const retried = await hub.request(`/admin/v1/jobs/${job_id}/retry`, {
      method: "POST",
      token: ALICE,
    });
    expect(retried.status).toBeLessThan(300);
  });

  test("checkpoints and audit verify per partition; events reads every partition by time", async () => {
    const { createCheckpointer } = await import("../../services/audit/index.ts");
    const { importPKCS8 } = await import("jose");
    const { logger } = captureLogger();
    const { layout, jsm } = hub.running.hub;
    // A quiet hub, as audit verify asks (docs/operations.md): every partition's projector has
    // written what it holds (a job of the tests above waits up to projector.settle_wait).
    await waitFor("every projector caught up", async () => {
      for (let partition = 0; partition < P; partition++) {
        const info = await jsm.consumers.info(layout.stream(partition), "projector");
        if (info.num_pending > 0 || info.num_ack_pending > 0) return false;
      }
      return true;
    });
    for (let partition = 0; partition < P; partition++) {
      const checkpointer = createCheckpointer({
        js: hub.running.hub.js,
        jsm: hub.running.hub.jsm,
        layout,
        partition,
        signingKey: await importPKCS8(await exportPKCS8(keys.privateKey), "EdDSA"),
        keyId: "test",
        clock: { now: () => new Date() },
        logger,
      });
      // Each partition's chain is sealed on its own stream, under its own subject.
      expect(await checkpointer.runOnce()).toBe(1);
    }
    const dir = await mkdtemp(join(tmpdir(), "switchyard-partitions-"));
    try {
      const pub = join(dir, "audit.pub");
      await Bun.write(pub, await exportSPKI(keys.publicKey));
      const verify = await cli(["audit", "verify", "--public-key", pub]);
      expect(verify.code).toBe(0);
      for (let p = 0; p < P; p++) {
        expect(verify.stdout).toMatch(
          new RegExp(
            `partition ${p}: \\d+ events, \\d+ jobs, 1 checkpoints .* 0 divergences, 0 chain problems`,
          ),
        );
      }
      const one = await cli(["audit", "verify", "--partition", "2"]);
      expect(one.code).toBe(0);
      expect(one.stdout).toContain("partition 2: ");
      expect(one.stdout).not.toContain("partition 1: ");
      const bad = await cli(["audit", "verify", "--partition", "4"]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain("--partition takes a partition from 0 to 3");

      const status = await cli(["status"]);
      expect(status.code).toBe(0);
      expect(status.stdout).toContain("partitions: 4");
      for (let p = 0; p < P; p++) {
        expect(status.stdout).toMatch(
          new RegExp(
            `partition ${p}: stream SWITCHYARD_EVENTS_P${p} leader=\\S+ projector lag: \\d+ events; held by projector=\\S+/${process.pid} indexer=`,
          ),
        );
      }

      const events = await cli(["events"]);
      expect(events.code).toBe(0);
      const lines = events.stdout
        .trim()
        .split("\n")
        .map(
          (l) =>
            JSON.parse(l) as {
              partition: number;
              time: string;
              event: { type: string; job_id?: string };
            },
        );
      const runs = lines.filter((l) => l.event.type === "run.requested");
      // 40 runs, 12 for the worker, the one cancelled and the operator's retry of it.
      expect(runs.length).toBe(54);
      expect(new Set(lines.map((l) => l.partition))).toEqual(new Set([0, 1, 2, 3]));
      // Merged by the server's receive time.
      const times = lines.map((l) => l.time);
      expect(times).toEqual([...times].sort());
      for (const l of runs) {
        expect(l.partition).toBe(layout.partitionOf({ job_id: l.event.job_id ?? "" }));
      }
      // One partition's export is one chain, verified offline.
      const part = await cli(["events", "--partition", "1"]);
      expect(part.code).toBe(0);
      const partLines = part.stdout.trim().split("\n");
      expect(partLines.every((l) => (JSON.parse(l) as { partition: number }).partition === 1)).toBe(
        true,
      );
      const file = join(dir, "p1.ndjson");
      await Bun.write(file, part.stdout);
      const offline = await cli(["audit", "verify", "--file", file, "--public-key", pub]);
      expect(offline.stdout).toContain("1 checkpoints");
      expect(offline.stdout).toContain("0 divergences, 0 chain problems");
      expect(offline.code).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("/metrics: the one process holds every partition of the projector and the indexer", async () => {
    const text = await waitFor("every partition held", async () => {
      const body = await (await fetch(`${hub.running.monitoring.url}/metrics`)).text();
      return body.includes(`switchyard_partitions_held{group="projector"} ${P}`) ? body : undefined;
    });
    expect(text).toContain(`switchyard_partitions_held{group="indexer"} ${P}`);
  });

  test("a start with another nats.partitions is refused, naming the key and both counts", async () => {
    const config = parseConfig(
      JSON.stringify({ nats: { url: hub.nats.url, partitions: 2 } }),
      {},
      "test config",
    );
    const { logger } = captureLogger();
    const refused = await connectHub(config, logger, "test").then(
      () => undefined,
      (err: unknown) => err as Error & { code?: string },
    );
    expect(refused?.code).toBe("partitions_mismatch");
    expect(refused?.message).toContain("nats.partitions is 2");
    expect(refused?.message).toContain("created with 4 partitions");
  });
});

describe("projector rebuild of a hub of 2 partitions", () => {
  test("rebuilds every partition's views, each under its own lease", async () => {
    // No projector runs: the views are made by the rebuild alone.
    await using small = await startHub({
      clients: [{ id: "acme", token: ACME, routes: ["demo.*"] }],
      yaml: "routes:\n  - key: demo.echo\n    executor: { kind: builtin, name: echo }\nindex: { enabled: false }",
      natsOptions: { partitions: 2 },
      services: ["ingress", "executor"],
    });
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await small.run({ request_id: `rb-${i}`, route: "demo.echo", input: "x" }, ACME);
      ids.push(((await res.json()) as { job_id: string }).job_id);
    }
    for (const id of ids) {
      await waitFor(`${id} done`, async () => {
        const res = await small.request(`/jobs/${id}`, { token: ACME });
        return ((await res.json()) as { status: string }).status === "done";
      });
    }
    const { rebuildProjection } = await import("../../services/projector/index.ts");
    const { layout, nc, js, jsm } = small.running.hub;
    const result = await rebuildProjection({
      nc,
      js,
      jsm,
      layout,
      logger: captureLogger().logger,
      probeMs: 100,
    });
    expect(result.jobs).toBe(10);
    for (const id of ids) {
      const view = await small.running.hub.viewsOf({ job_id: id }).get(`acme.${id}`);
      expect((view?.json() as { status: string } | undefined)?.status).toBe("done");
    }
  });
});
