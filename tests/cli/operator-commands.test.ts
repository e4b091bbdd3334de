/**
 * The operator commands (issue 16): `switchyard jobs …` and `switchyard callbacks failed|redeliver`
 * talk to the operator API with a base URL and an operator token only; `switchyard index rebuild`
 * refills the search index from the stream; `audit verify` checks the index like the job view.
 */

import { Database } from "bun:sqlite";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CLIENT_TOKENS,
  OPERATOR_TOKENS,
  type OperatorHub,
  startOperatorHub,
} from "../admin/operator-hub.ts";
import { hubYaml, startHub } from "../helpers/hub.ts";
import { startNats } from "../helpers/nats.ts";
import { runToEnd } from "../helpers/run.ts";
import { waitFor } from "../helpers/wait.ts";

const ROOT = join(import.meta.dir, "..", "..");

async function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { stdout, stderr, code } = await runToEnd(
    [process.execPath, join(ROOT, "services/cli/main.ts"), ...args],
    {
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", ...env },
    },
  );
  return { code, stdout, stderr };
}

describe("jobs and callbacks through the operator API", () => {
  let op: OperatorHub;
  let env: Record<string, string>;
  let receiver: ReturnType<typeof Bun.serve>;

  beforeAll(async () => {
    receiver = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => new Response(null, { status: 410 }),
    });
    op = await startOperatorHub();
    env = { SWITCHYARD_ADMIN_URL: op.hub.baseUrl, SWITCHYARD_OPERATOR_TOKEN: OPERATOR_TOKENS.olga };
  });
  afterAll(async () => {
    await op?.stop();
    receiver?.stop(true);
  });

  test("list, show, cancel and retry", async () => {
    const res = await op.hub.run(
      { request_id: "cli-1", route: "demo.slow", input: "x" },
      CLIENT_TOKENS.acme,
    );
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    const listed = await waitFor("the job to be listed", async () => {
      const out = await cli(
        ["jobs", "list", "--where", "client=acme", "--where", "request_id=cli-1"],
        env,
      );
      return out.stdout.includes(jobId) ? out : undefined;
    });
    expect(listed.code).toBe(0);
    const line = JSON.parse(listed.stdout.trim().split("\n")[0] ?? "{}") as {
      job_id: string;
      client_id: string;
    };
    expect(line).toMatchObject({ job_id: jobId, client_id: "acme" });
    const cancelled = await cli(["jobs", "cancel", jobId], env);
    expect(cancelled.code).toBe(0);
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ status: 202, job: { status: "error" } });
    const retried = await cli(["jobs", "retry", jobId], env);
    expect(retried.code).toBe(0);
    const retry = JSON.parse(retried.stdout) as {
      status: number;
      job: { job_id: string; retry_of: string };
    };
    expect(retry.status).toBe(202);
    expect(retry.job.retry_of).toBe(jobId);
    const shown = await cli(["jobs", "show", jobId], env);
    const detail = JSON.parse(shown.stdout) as {
      timeline: { type: string }[];
      links: Record<string, string>;
    };
    expect(detail.timeline.map((e) => e.type)).toEqual(
      expect.arrayContaining(["run.requested", "job.dispatched", "job.error", "job.retried"]),
    );
    expect(detail.links.retried_as).toBe(retry.job.job_id);
  });

  test("a viewer cannot act; bad usage exits 2; a refusal of the hub exits 1", async () => {
    const viewer = { ...env, SWITCHYARD_OPERATOR_TOKEN: OPERATOR_TOKENS.victor };
    const denied = await cli(["jobs", "cancel", "job_AAAAAAAAAAAAAAAAAAAAAA"], viewer);
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain("forbidden");
    expect((await cli(["jobs", "list", "--where", "nokey"], env)).code).toBe(2);
    expect((await cli(["jobs", "frobnicate"], env)).code).toBe(2);
    const noToken = await cli(["jobs", "list"], { SWITCHYARD_ADMIN_URL: op.hub.baseUrl });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain("SWITCHYARD_OPERATOR_TOKEN");
    const clientToken = await cli(["jobs", "list"], {
      ...env,
      SWITCHYARD_OPERATOR_TOKEN: CLIENT_TOKENS.acme,
    });
    expect(clientToken.code).toBe(1);
    expect(clientToken.stderr).toContain("unauthorized");
  });

  test("failed callbacks are listed and redelivered in bulk: dry run, then --yes", async () => {
    const url = `http://127.0.0.1:${receiver.port}/gone`;
    for (let i = 0; i < 2; i++) {
      await op.hub.run(
        { request_id: `cli-cb-${i}`, route: "demo.echo", input: "x", callback_url: url },
        CLIENT_TOKENS.globex,
      );
    }
    const failed = await waitFor("two failed callbacks", async () => {
      const out = await cli(["callbacks", "failed", "--where", "client=globex"], env);
      return out.stdout.trim().split("\n").filter(Boolean).length === 2 ? out : undefined;
    });
    expect(failed.code).toBe(0);
    const dry = await cli(["callbacks", "redeliver", "--where", "client=globex", "--dry-run"], env);
    expect(dry.code).toBe(0);
    expect(dry.stderr).toContain("2 failed callback(s) match");
    const unconfirmed = await cli(["callbacks", "redeliver", "--where", "client=globex"], env);
    expect(unconfirmed.code).toBe(2);
    expect(unconfirmed.stderr).toContain("--yes");
    const done = await cli(["callbacks", "redeliver", "--where", "client=globex", "--yes"], env);
    expect(done.code).toBe(0);
    expect(done.stdout).toContain("2 redelivery request(s) made");
  });
});

/** One client whose runs the index tests list. */
const INDEX_CLIENTS = [{ id: "acme", token: CLIENT_TOKENS.acme }];

/**
 * A hub's config file in a temporary folder, with a SQLite index of its own there: `extra` for
 * the in-process hubs, `env` for the CLI.
 */
function indexHubFiles(natsUrl: string) {
  const dir = mkdtempSync(join(tmpdir(), "sy-index-cli-"));
  const indexPath = join(dir, "index.sqlite");
  const extra = `index: { sqlite_path: "${indexPath}" }`;
  const configPath = join(dir, "switchyard.yaml");
  writeFileSync(configPath, hubYaml(natsUrl, INDEX_CLIENTS, extra));
  return { dir, indexPath, extra, env: { SWITCHYARD_CONFIG: configPath, NATS_URL: natsUrl } };
}

describe("index rebuild and audit verify", () => {
  test("the index is refilled from the stream, and verify finds a changed row", async () => {
    await using nats = await startNats();
    const { dir, indexPath, extra, env } = indexHubFiles(nats.url);
    try {
      // No projector service here: no indexer runs; the rebuild is the only writer.
      await using hub = await startHub({
        nats,
        clients: INDEX_CLIENTS,
        yaml: extra,
        services: ["ingress", "executor"],
      });
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const body = { request_id: `rb-${i}`, route: "demo.echo", input: "x" };
        const res = await hub.run(body, CLIENT_TOKENS.acme);
        expect(res.status).toBe(202);
        ids.push(((await res.json()) as { job_id: string }).job_id);
      }
      const empty = (await (await hub.request("/jobs", { token: CLIENT_TOKENS.acme })).json()) as {
        jobs: unknown[];
      };
      expect(empty.jobs).toHaveLength(0);
      for (const id of ids) {
        await waitFor("the echo to finish", async () => {
          const job = (await (
            await hub.request(`/jobs/${id}`, { token: CLIENT_TOKENS.acme })
          ).json()) as { status: string };
          return job.status === "done";
        });
      }
      const rebuilt = await cli(["index", "rebuild"], env);
      expect(rebuilt.code).toBe(0);
      expect(rebuilt.stdout).toContain("3 jobs");
      const listed = (await (await hub.request("/jobs", { token: CLIENT_TOKENS.acme })).json()) as {
        jobs: { status: string }[];
      };
      expect(listed.jobs.map((j) => j.status)).toEqual(["done", "done", "done"]);
      const status = await cli(["status"], env);
      expect(status.stdout).toContain("index lag: 0 events");
      // KV views are written by the projector, which does not run here: verify the index only.
      const db = new Database(indexPath);
      db.exec(
        `UPDATE sy_jobs SET view = json_set(view, '$.status', 'error') WHERE request_id = 'rb-1'`,
      );
      db.close();
      const verified = await cli(["audit", "verify"], env);
      expect(verified.code).toBe(1);
      expect(verified.stdout).toMatch(
        /INDEX DIVERGENCE job=acme\.job_\S+ field=status index="error" replayed="done"/,
      );
      expect(verified.stdout).toContain("1 index divergences");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("under a running indexer the rebuild empties the index and that indexer folds it again, idle until then: the views go on, and a replay agrees", async () => {
    await using nats = await startNats();
    const { dir, extra, env } = indexHubFiles(nats.url);
    const clients = INDEX_CLIENTS;
    const listed = async (hub: Awaited<ReturnType<typeof startHub>>) =>
      (
        (await (await hub.request("/jobs", { token: CLIENT_TOKENS.acme })).json()) as {
          jobs: unknown[];
        }
      ).jobs.length;
    try {
      const readModels = await startHub({
        nats,
        clients,
        yaml: extra,
        services: ["projector", "indexer"],
      });
      await using hub = await startHub({
        nats,
        clients,
        yaml: extra,
        services: ["ingress", "executor"],
      });
      for (let i = 0; i < 3; i++) {
        const res = await hub.run(
          { request_id: `busy-${i}`, route: "demo.echo", input: "x" },
          CLIENT_TOKENS.acme,
        );
        expect(res.status).toBe(202);
      }
      await waitFor("three rows in the index", async () => (await listed(hub)) === 3);

      // The read models are idle: the indexer learns of the reset from its refused heartbeat.
      const rebuilt = await cli(["index", "rebuild"], env);
      expect(rebuilt.stderr).toBe("");
      expect(rebuilt.code).toBe(0);
      expect(rebuilt.stdout).toContain("an indexer is running (the indexer claim is held by");
      expect(rebuilt.stdout).toContain(
        "the running indexer rebuilt the search index (sqlite): 3 jobs",
      );
      expect(await listed(hub)).toBe(3);
      const logs = readModels.logs();
      expect(logs).toContain("indexer fenced; leads again if it still holds the lease");
      expect(logs.split('"msg":"indexer started"').length - 1).toBe(2);
      // The same process goes on: views and rows of what comes next, and a replay agrees with both.
      const res = await hub.run(
        { request_id: "after-rebuild", route: "demo.echo", input: "x" },
        CLIENT_TOKENS.acme,
      );
      expect(res.status).toBe(202);
      const { job_id: fourth } = (await res.json()) as { job_id: string };
      await waitFor("the fourth job's view", async () => {
        const job = await hub.request(`/jobs/${fourth}`, { token: CLIENT_TOKENS.acme });
        return ((await job.json()) as { status: string }).status === "done";
      });
      await waitFor("the fourth row", async () => (await listed(hub)) === 4, { timeoutMs: 15_000 });
      const verified = await cli(["audit", "verify"], env);
      expect(verified.stdout).not.toContain("DIVERGENCE");
      expect(verified.code).toBe(0);
      // Caught up, the indexer folds the views' deliveries again (no durable of its own).
      const status = await cli(["status"], env);
      expect(status.stdout).toContain("fed from the projector's deliveries");
      await readModels.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
