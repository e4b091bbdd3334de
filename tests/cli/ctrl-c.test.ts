/**
 * Ctrl-C on `switchyard up` (and `timeout npm start`) is a clean stop. A terminal sends SIGINT to
 * the whole foreground process group: the embedded nats-server used to be in it, died first, and
 * the draining hub logged `nats disconnected`, `lease lost` and level-50 "job handling failed"
 * lines. The server now has a process group of its own and is stopped after the drain.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { processAlive } from "../../services/cli/data-dir.ts";
import { startNatsServer } from "../../shared/nats/index.ts";
import { DEFAULT_CLIENTS, hubYaml } from "../helpers/hub.ts";
import { startUp } from "../helpers/up-process.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = DEFAULT_CLIENTS[0] as (typeof DEFAULT_CLIENTS)[0];
const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
const JOBS = 8;

const ROUTES = `
routes:
  - key: demo.slow
    executor: { kind: builtin, name: sleep, sleep_ms: 1500 }
`;

/** Every event of the stream in `storeDir`, read with `switchyard events` after the hub stopped. */
async function storedEvents(storeDir: string): Promise<{ type: string; job_id: string }[]> {
  const server = await startNatsServer({ storeDir, env: process.env });
  try {
    const proc = Bun.spawn([process.execPath, MAIN, "events"], {
      env: { ...process.env, NATS_URL: server.url, SWITCHYARD_CONFIG: "" },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [stdout, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
    expect(code).toBe(0);
    return stdout
      .trim()
      .split("\n")
      .map((line) => (JSON.parse(line) as { event: { type: string; job_id: string } }).event);
  } finally {
    await server.stop();
  }
}

// SIGINT: Ctrl-C in a terminal. SIGTERM: `timeout npm start`, which signals its whole group.
test.each(["SIGINT", "SIGTERM"] as const)(
  "%s to the process group with jobs in flight: exit 0, no error line, nats-server gone, every job's events stored",
  async (signal) => {
    await using up = await startUp({
      // The embedded nats-server: `up` starts it in ./.data, nats.url is replaced.
      yaml: hubYaml("nats://127.0.0.1:1", [ACME], ROUTES),
      ownProcessGroup: true,
      prefix: "switchyard-ctrl-c-",
    });
    const base = await up.listening();
    const hub = (await Bun.file(join(up.dir, ".data/hub.json")).json()) as { nats_pid: number };
    expect(processAlive(hub.nats_pid)).toBe(true);
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i++) {
      const res = await fetch(`${base}/run`, {
        method: "POST",
        headers: { authorization: `Bearer ${ACME.token}`, "content-type": "application/json" },
        body: JSON.stringify({ request_id: `ctrl-c-${i}`, route: "demo.slow", input: "x" }),
      });
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as { job_id: string }).job_id);
    }
    // In flight: every task handed to the executor and sleeping.
    await waitFor("every job running", async () => {
      for (const id of ids) {
        const res = await fetch(`${base}/jobs/${id}`, {
          headers: { authorization: `Bearer ${ACME.token}` },
        });
        if (((await res.json()) as { status: string }).status !== "running") return false;
      }
      return true;
    });

    up.signalGroup(signal);
    expect(await up.proc.exited).toBe(0);

    const errors = up.logLines().filter((line) => Number(line.level) >= 50);
    expect(errors).toEqual([]);
    expect(up.logLines().at(-1)?.msg).toBe("stopped");
    expect(processAlive(hub.nats_pid)).toBe(false);

    const events = await storedEvents(join(up.dir, ".data/nats"));
    for (const id of ids) {
      const types = events.filter((e) => e.job_id === id).map((e) => e.type);
      expect({ id, types }).toEqual({ id, types: ["run.requested", "job.running", "job.done"] });
    }
  },
  90_000,
);
