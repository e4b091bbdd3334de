import { describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportPKCS8, exportSPKI, generateKeyPair } from "jose";
import { jobViewKey } from "../../shared/jobs/index.ts";
import { DEFAULT_CLIENTS, startHub } from "../helpers/hub.ts";
import { runToEnd } from "../helpers/run.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = DEFAULT_CLIENTS[0] as (typeof DEFAULT_CLIENTS)[0];
const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
const keys = await generateKeyPair("EdDSA", { crv: "Ed25519", extractable: true });
const privatePem = await exportPKCS8(keys.privateKey);
const publicPem = await exportSPKI(keys.publicKey);

async function cli(
  args: string[],
  natsUrl: string,
  where: { cwd?: string; env?: Record<string, string> } = {},
) {
  return runToEnd([process.execPath, MAIN, ...args], {
    ...(where.cwd ? { cwd: where.cwd } : {}),
    env: { ...process.env, NATS_URL: natsUrl, SWITCHYARD_CONFIG: "", ...where.env },
  });
}

describe("audit trail (real nats-server)", () => {
  test("checkpoints, events export, verify, tampering found at its sequence, view corruption reported", async () => {
    await using hub = await startHub({
      yaml: `audit: { checkpoint_interval: 1h, signing_key_pem: ${JSON.stringify(privatePem)} }`,
    });
    const jobs: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await hub.run(
        { request_id: `audit-${i}`, route: "demo.echo", input: `in ${i}` },
        ACME.token,
      );
      jobs.push(((await res.json()) as { job_id: string }).job_id);
    }
    await waitFor("all jobs done", async () => {
      for (const id of jobs) {
        const r = await hub.request(`/jobs/${id}`, { token: ACME.token });
        if (((await r.json()) as { status: string }).status !== "done") return false;
      }
      return true;
    });
    // Seal what is there (the service runs this on its interval).
    const { createCheckpointer } = await import("../../services/audit/index.ts");
    const { importPKCS8 } = await import("jose");
    const { createLogger } = await import("../../shared/log/index.ts");
    const checkpointer = createCheckpointer({
      js: hub.running.hub.js,
      jsm: hub.running.hub.jsm,
      layout: hub.running.hub.layout,
      partition: 0,
      signingKey: await importPKCS8(privatePem, "EdDSA"),
      keyId: "test",
      clock: { now: () => new Date() },
      logger: createLogger({ level: "silent", service: "t" }),
    });
    expect(await checkpointer.runOnce()).toBe(1);
    expect(await checkpointer.runOnce()).toBe(0);

    const dir = await mkdtemp(join(tmpdir(), "switchyard-audit-"));
    try {
      const pub = join(dir, "audit.pub");
      await Bun.write(pub, publicPem);
      const url = hub.nats.url;

      const live = await cli(["audit", "verify", "--public-key", pub], url);
      expect(live.stdout).toContain("0 divergences, 0 chain problems");
      expect(live.code).toBe(0);

      // Auditors need only what they use: beside a hub config whose client secrets (environment
      // variables) they do not have, with only a public key and a NATS URL, verify still runs.
      const config = join(dir, "switchyard.yaml");
      await Bun.write(
        config,
        `nats: { url: "nats://127.0.0.1:1" }\nclients:\n  - id: acme\n    token_sha256: ["\${ACME_HASH}"]\n    routes: ["*"]\n    callback_secrets: ["\${ACME_CALLBACK_SECRET}"]\n`,
      );
      const auditor = await cli(["audit", "verify", "--public-key", pub, "--nats-url", url], "", {
        cwd: dir,
        env: { SWITCHYARD_CONFIG: config },
      });
      expect({ code: auditor.code, stderr: auditor.stderr }).toEqual({ code: 0, stderr: "" });
      expect(auditor.stdout).toContain("0 divergences, 0 chain problems");

      // Export the whole stream, then tamper with copies of it.
      const exported = await cli(["events"], url);
      expect(exported.code).toBe(0);
      const lines = exported.stdout.trim().split("\n");
      expect(lines.length).toBe(13); // 6 run.requested + 6 job.done + 1 checkpoint
      const file = join(dir, "export.ndjson");
      await Bun.write(file, exported.stdout);
      expect((await cli(["audit", "verify", "--file", file, "--public-key", pub], url)).code).toBe(
        0,
      );

      const seqOf = (line: string) => (JSON.parse(line) as { seq: number }).seq;
      const target = lines[4] as string;
      const altered = lines.map((l) =>
        l === target ? l.replace(/"in 2"|"in \d"/, '"forged"') : l,
      );
      expect(altered).not.toEqual(lines);
      await Bun.write(file, `${altered.join("\n")}\n`);
      const alteredRun = await cli(["audit", "verify", "--file", file, "--public-key", pub], url);
      expect(alteredRun.code).toBe(1);
      expect(alteredRun.stdout).toContain(`CHAIN seq=${seqOf(target)} `);

      await Bun.write(file, `${lines.filter((l) => l !== target).join("\n")}\n`);
      const dropped = await cli(["audit", "verify", "--file", file, "--public-key", pub], url);
      expect(dropped.code).toBe(1);
      expect(dropped.stdout).toContain(`CHAIN seq=${seqOf(target)} missing`);

      const swapped = [...lines];
      [swapped[4], swapped[5]] = [swapped[5] as string, swapped[4] as string];
      await Bun.write(file, `${swapped.join("\n")}\n`);
      const reordered = await cli(["audit", "verify", "--file", file, "--public-key", pub], url);
      expect(reordered.code).toBe(1);
      expect(reordered.stdout).toContain(`CHAIN seq=${seqOf(lines[4] as string)} out of order`);

      // Corrupt one job view on purpose: verify reports the job, the field and both values.
      const key = jobViewKey({ client_id: "acme", job_id: jobs[0] as string });
      const view = (await hub.running.hub.jobs.get(key))?.json() as Record<string, unknown>;
      await hub.running.hub.jobs.put(key, JSON.stringify({ ...view, status: "error" }));
      const corrupted = await cli(["audit", "verify"], url);
      expect(corrupted.code).toBe(1);
      expect(corrupted.stdout).toContain(
        `DIVERGENCE job=${key} field=status view="error" replayed="done"`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("switchyard events", () => {
  test("filters by job, client and type, pages by sequence, prints a table, follows", async () => {
    await using hub = await startHub();
    const a = (await (
      await hub.run({ request_id: "ev-1", route: "demo.echo", input: "x" }, ACME.token)
    ).json()) as {
      job_id: string;
    };
    await hub.run(
      { request_id: "ev-1", route: "demo.echo", input: "x" },
      (DEFAULT_CLIENTS[1] as typeof ACME).token,
    );
    await waitFor("done", async () => {
      const r = await hub.request(`/jobs/${a.job_id}`, { token: ACME.token });
      return ((await r.json()) as { status: string }).status === "done";
    });
    const url = hub.nats.url;
    const parse = (out: string) =>
      out
        .trim()
        .split("\n")
        .filter(Boolean)
        .map(
          (l) =>
            JSON.parse(l) as {
              seq: number;
              event: { type: string; job_id: string; client_id: string };
            },
        );

    const byJob = parse((await cli(["events", "--job", a.job_id], url)).stdout);
    expect(byJob.map((r) => r.event.type)).toEqual(["run.requested", "job.done"]);
    const byClient = parse((await cli(["events", "--client", "globex"], url)).stdout);
    expect(byClient.length).toBeGreaterThan(0);
    expect(byClient.every((r) => r.event.client_id === "globex")).toBe(true);
    const byType = parse((await cli(["events", "--type", "run.requested"], url)).stdout);
    expect(byType.map((r) => r.event.type)).toEqual(["run.requested", "run.requested"]);

    const first = parse((await cli(["events", "--limit", "2"], url)).stdout);
    expect(first).toHaveLength(2);
    const rest = parse(
      (await cli(["events", "--from-seq", String((first[1]?.seq ?? 0) + 1)], url)).stdout,
    );
    expect(rest[0]?.seq).toBe((first[1]?.seq ?? 0) + 1);

    const table = (await cli(["events", "--pretty", "--job", a.job_id], url)).stdout;
    expect(table).toContain("run.requested");
    expect(table).toContain("route=demo.echo");
    // The table summarises a run request by route and request_id; the task text stays out.
    const requestRow = table.split("\n").find((l) => l.includes("run.requested")) ?? "";
    expect(requestRow).not.toContain("input");

    const follower = Bun.spawn(
      [process.execPath, MAIN, "events", "--follow", "--type", "job.done"],
      {
        env: { ...process.env, NATS_URL: url, SWITCHYARD_CONFIG: "" },
        stdout: "pipe",
      },
    );
    let seen = "";
    void (async () => {
      for await (const chunk of follower.stdout) seen += new TextDecoder().decode(chunk);
    })();
    try {
      await waitFor("the existing done events", () => seen.split("\n").filter(Boolean).length >= 2);
      const b = (await (
        await hub.run({ request_id: "ev-2", route: "demo.echo", input: "y" }, ACME.token)
      ).json()) as {
        job_id: string;
      };
      await waitFor("the new job.done to be followed", () => seen.includes(b.job_id));
    } finally {
      follower.kill();
    }
  });
});
