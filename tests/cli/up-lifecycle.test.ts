import { afterAll, describe, expect, test } from "bun:test";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { processAlive } from "../../services/cli/data-dir.ts";
import { startNats } from "../helpers/nats.ts";
import { runToEnd } from "../helpers/run.ts";
import { waitFor } from "../helpers/wait.ts";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
const dirs: string[] = [];
const procs: ReturnType<typeof Bun.spawn>[] = [];

afterAll(async () => {
  for (const p of procs) p.kill("SIGKILL");
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "switchyard-up-"));
  dirs.push(dir);
  return dir;
}

/** The environment of a user without NATS_URL or a config file. */
const baseEnv = () => {
  const { NATS_URL: _, SWITCHYARD_CONFIG: __, ...rest } = process.env;
  return { ...rest, SWITCHYARD_PORT: "0", SWITCHYARD_LOG_LEVEL: "warn" };
};

interface Up {
  readonly proc: ReturnType<typeof Bun.spawn>;
  readonly base: string;
  readonly token: string;
  readonly hub: { pid: number; nats_pid: number; nats_url: string; nats_token?: string };
}

async function startUp(dir: string): Promise<Up> {
  const out = { text: "" };
  const proc = Bun.spawn([process.execPath, MAIN, "up"], {
    cwd: dir,
    env: baseEnv(),
    stdout: "pipe",
    stderr: "pipe",
  });
  procs.push(proc);
  void (async () => {
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      out.text += new TextDecoder().decode(chunk);
    }
  })();
  await waitFor("the demo banner", () => out.text.includes("curl"), { timeoutMs: 20_000 });
  const hub = JSON.parse(await readFile(join(dir, ".data/hub.json"), "utf8"));
  return {
    proc,
    base: /base URL : (\S+)/.exec(out.text)?.[1] ?? "",
    token: /token {4}: (\S+)/.exec(out.text)?.[1] ?? "",
    hub,
  };
}

async function cli(dir: string, args: string[], env: Record<string, string | undefined> = {}) {
  return runToEnd([process.execPath, MAIN, ...args], {
    cwd: dir,
    env: { ...baseEnv(), ...env },
  });
}

const run = (up: Up, requestId: string) =>
  fetch(`${up.base}/run`, {
    method: "POST",
    headers: { authorization: `Bearer ${up.token}`, "content-type": "application/json" },
    body: JSON.stringify({ request_id: requestId, route: "demo.echo", input: "x" }),
  });

describe("switchyard up owns its data directory", () => {
  test("a second up in the same folder is refused; the first keeps working", async () => {
    const dir = await folder();
    const first = await startUp(dir);
    const second = await cli(dir, ["up"]);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain("in use by another switchyard up");
    expect(second.stderr).toContain(`pid ${first.hub.pid}`);
    expect((await run(first, "still-mine")).status).toBe(202);
    first.proc.kill("SIGTERM");
    expect(await first.proc.exited).toBe(0);
  });

  test("SIGKILL of up takes its nats-server down; the next up takes over the store", async () => {
    const dir = await folder();
    const first = await startUp(dir);
    const accepted = (await (await run(first, "before-kill")).json()) as { job_id: string };
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    await waitFor("the embedded nats-server to exit", () => !processAlive(first.hub.nats_pid), {
      timeoutMs: 10_000,
    });
    const next = await startUp(dir);
    expect(next.hub.pid).not.toBe(first.hub.pid);
    const job = await fetch(`${next.base}/jobs/${accepted.job_id}`, {
      headers: { authorization: `Bearer ${next.token}` },
    });
    expect(job.status).toBe(200); // the store survived; nothing accepted was lost
    next.proc.kill("SIGTERM");
    expect(await next.proc.exited).toBe(0);
  });
});

describe("CLI commands use the same server as up, and create nothing", () => {
  test("status in the folder of a running up talks to its embedded server", async () => {
    const dir = await folder();
    const up = await startUp(dir);
    const status = await cli(dir, ["status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`at ${up.hub.nats_url.replace("nats://", "")}`);
    expect(status.stdout).toContain("SWITCHYARD_EVENTS");
    const rebuild = await cli(dir, ["projector", "rebuild"]);
    expect(rebuild.code).toBe(1);
    expect(rebuild.stderr).toContain("a projector is running");
    expect((await run(up, "after-refused-rebuild")).status).toBe(202);
    up.proc.kill("SIGTERM");
    await up.proc.exited;
  });

  test("the embedded nats-server wants the token of the owner-only hub.json", async () => {
    const dir = await folder();
    const up = await startUp(dir);
    expect((await stat(join(dir, ".data/hub.json"))).mode & 0o777).toBe(0o600);
    const token = up.hub.nats_token ?? "";
    expect(token.length).toBeGreaterThanOrEqual(32);
    // The token alone, for a NATS worker on this machine (NATS_TOKEN_FILE), owner-only too.
    const tokenFile = join(dir, ".data/nats.token");
    expect((await stat(tokenFile)).mode & 0o777).toBe(0o600);
    expect((await Bun.file(tokenFile).text()).trim()).toBe(token);
    const refused = await connect({ servers: up.hub.nats_url, timeout: 2_000 }).catch(
      (e: Error) => e,
    );
    expect(String(refused)).toContain("Authorization Violation");
    const nc = await connect({ servers: up.hub.nats_url, token });
    await nc.close();
    const events = await cli(dir, ["events", "--limit", "1"]);
    expect(events.code).toBe(0);
    expect(events.stdout + events.stderr).not.toContain(token);
    up.proc.kill("SIGTERM");
    await up.proc.exited;
  });

  test("with nothing to go on, a command says so instead of guessing 127.0.0.1:4222", async () => {
    const result = await cli(await folder(), ["status"]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("no hub to talk to");
  });

  test("a NATS server without the hub's streams is refused, and left as it was", async () => {
    await using nats = await startNats();
    for (const args of [["status"], ["events"], ["projector", "rebuild"], ["audit", "verify"]]) {
      const result = await cli(await folder(), args, { NATS_URL: nats.url });
      expect({ args, code: result.code }).toEqual({ args, code: 1 });
      expect(result.stderr).toContain("no Switchyard hub at");
      expect(result.stderr).toContain("Nothing was created");
    }
    const jsm = await jetstreamManager(nats.nc);
    expect(await jsm.streams.names().next()).toEqual([]);
  });
});
