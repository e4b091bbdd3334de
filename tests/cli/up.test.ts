import { describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "../helpers/wait.ts";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");

async function readAll(stream: ReadableStream<Uint8Array>, sink: { text: string }) {
  const decoder = new TextDecoder();
  for await (const chunk of stream) sink.text += decoder.decode(chunk, { stream: true });
}

describe("switchyard up (demo mode, embedded nats-server)", () => {
  test("prints a working base URL, token and curl example; SIGTERM exits 0 and stops nats", async () => {
    const dir = await mkdtemp(join(tmpdir(), "switchyard-up-"));
    const out = { text: "" };
    const err = { text: "" };
    const proc = Bun.spawn([process.execPath, MAIN, "up"], {
      cwd: dir,
      env: { ...process.env, NATS_URL: "", SWITCHYARD_PORT: "0", SWITCHYARD_LOG_LEVEL: "warn" },
      stdout: "pipe",
      stderr: "pipe",
    });
    void readAll(proc.stdout, out);
    void readAll(proc.stderr, err);
    try {
      await waitFor("the demo banner", () => out.text.includes("curl"), { timeoutMs: 20_000 });
      const base = /base URL : (\S+)/.exec(out.text)?.[1] ?? "";
      const token = /token {4}: (\S+)/.exec(out.text)?.[1] ?? "";
      expect(base).toStartWith("http://127.0.0.1:");
      expect(token).toStartWith("sy_demo_");
      expect(out.text).toContain("Authorization: Bearer");
      const res = await fetch(`${base}/run`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ request_id: "hello-1", route: "demo.echo", input: "hello" }),
      });
      expect(res.status).toBe(202);
      const { job_id } = (await res.json()) as { job_id: string };
      const job = await waitFor("the demo job to finish", async () => {
        const r = await fetch(`${base}/jobs/${job_id}`, {
          headers: { authorization: `Bearer ${token}` },
        });
        const body = (await r.json()) as { status: string; output?: unknown };
        return body.status === "done" ? body : undefined;
      });
      expect(job.output).toBe("hello");
      // The demo's console and operator (issue 16).
      const operatorToken = /operator token: (\S+)/.exec(out.text)?.[1] ?? "";
      expect(operatorToken).toStartWith("sy_op_");
      expect((await fetch(`${base}/console/`)).status).toBe(200);
      const listed = await waitFor("the demo job in the index", async () => {
        const r = await fetch(`${base}/admin/v1/jobs?request_id=hello-1`, {
          headers: { authorization: `Bearer ${operatorToken}` },
        });
        const body = (await r.json()) as { jobs: { job_id: string }[] };
        return body.jobs.length === 1 ? body.jobs : undefined;
      });
      expect(listed[0]?.job_id).toBe(job_id);
      proc.kill("SIGTERM");
      expect(await proc.exited).toBe(0);
      // The embedded server's store is under ./.data/nats of the working directory.
      expect(
        await Bun.file(
          join(dir, ".data/nats/jetstream/$G/streams/SWITCHYARD_EVENTS/meta.inf"),
        ).exists(),
      ).toBe(true);
    } finally {
      proc.kill("SIGKILL");
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("without a nats-server binary it says how to install one or set NATS_URL", async () => {
    const dir = await mkdtemp(join(tmpdir(), "switchyard-up-"));
    try {
      const proc = Bun.spawn([process.execPath, MAIN, "up"], {
        cwd: dir,
        env: { PATH: "/nonexistent", NATS_SERVER_BIN: "/nonexistent/nats-server", HOME: dir },
        stdout: "pipe",
        stderr: "pipe",
      });
      expect(await proc.exited).toBe(1);
      const stderr = await new Response(proc.stderr).text();
      expect(stderr).toContain("apt-get install nats-server");
      expect(stderr).toContain("NATS_URL=");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("a bad config file stops start-up with a message naming the key", async () => {
    const dir = await mkdtemp(join(tmpdir(), "switchyard-cfg-"));
    try {
      await Bun.write(join(dir, "switchyard.yaml"), "server: { port: -5 }\nclients: []\n");
      const proc = Bun.spawn([process.execPath, MAIN, "serve", "ingress"], {
        cwd: dir,
        env: { ...process.env, SWITCHYARD_CONFIG: join(dir, "switchyard.yaml") },
        stdout: "pipe",
        stderr: "pipe",
      });
      expect(await proc.exited).toBe(1);
      const stderr = await new Response(proc.stderr).text();
      expect(stderr).toContain("server.port:");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("token new prints a token once and its SHA-256 for the config", async () => {
    const proc = Bun.spawn([process.execPath, MAIN, "token", "new", "acme"], { stdout: "pipe" });
    expect(await proc.exited).toBe(0);
    const text = await new Response(proc.stdout).text();
    const token = /token \(shown once[^:]*\): (\S+)/.exec(text)?.[1] ?? "";
    const hash = /token_sha256: \["([0-9a-f]{64})"\]/.exec(text)?.[1];
    expect(token).toStartWith("sy_acme_");
    expect(hash).toBe(new Bun.CryptoHasher("sha256").update(token).digest("hex"));
  });
});
