/**
 * The operator CLI finds its hub as the other commands do: `switchyard jobs list` in the folder of
 * a running `switchyard up` needs only the operator token (before, it demanded
 * SWITCHYARD_ADMIN_URL). The demo banner's `export` lines, pasted into a shell, are enough from
 * any folder; on a terminal the list has a header row. Real `up`, real shell, a real pty (script).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runToEnd } from "../helpers/run.ts";
import { waitFor } from "../helpers/wait.ts";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
const BASE_ENV = { PATH: process.env.PATH ?? "", HOME: tmpdir() };

let dir = "";
let elsewhere = "";
let up: ReturnType<typeof Bun.spawn> | undefined;
let banner = "";

async function sh(script: string, cwd: string, env: Record<string, string> = {}) {
  return runToEnd(["bash", "-c", script], {
    cwd,
    env: { ...BASE_ENV, SY: `${process.execPath} ${MAIN}`, ...env },
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "switchyard-opdisc-"));
  elsewhere = await mkdtemp(join(tmpdir(), "switchyard-opdisc-other-"));
  up = Bun.spawn([process.execPath, MAIN, "up"], {
    cwd: dir,
    env: { ...process.env, NATS_URL: "", SWITCHYARD_PORT: "0", SWITCHYARD_LOG_LEVEL: "warn" },
    stdout: "pipe",
    stderr: "ignore",
  });
  const stdout = up.stdout as ReadableStream<Uint8Array>;
  void (async () => {
    for await (const chunk of stdout) banner += new TextDecoder().decode(chunk);
  })();
  await waitFor("the demo banner", () => banner.includes("jobs list"), { timeoutMs: 20_000 });
});

afterAll(async () => {
  up?.kill("SIGTERM");
  await up?.exited;
  await rm(dir, { recursive: true, force: true });
  await rm(elsewhere, { recursive: true, force: true });
});

describe("the operator CLI finds its hub", () => {
  test("the banner's export lines run a job and list it from another folder; the up folder needs only the token", async () => {
    const exports = banner
      .split("\n")
      .filter((line) => /^\s+export SWITCHYARD_[A-Z_]+=\S+$/.test(line))
      .map((line) => line.trim());
    expect(exports.map((line) => line.split("=")[0])).toEqual([
      "export SWITCHYARD_URL",
      "export SWITCHYARD_TOKEN",
      "export SWITCHYARD_OPERATOR_TOKEN",
    ]);
    const run = await sh(
      `${exports.join("\n")}
curl -s -X POST "$SWITCHYARD_URL/run" -H "Authorization: Bearer $SWITCHYARD_TOKEN" \\
  -H 'Content-Type: application/json' -d '{"request_id":"disc-1","route":"demo.echo","input":"hi"}'`,
      elsewhere,
    );
    const jobId = (JSON.parse(run.stdout) as { job_id: string }).job_id;
    expect(jobId).toStartWith("job_");
    // From another folder, with the pasted exports only.
    const listed = await waitFor("the job in the operator list", async () => {
      const out = await sh(
        `${exports.join("\n")}\n$SY jobs list --where request_id=disc-1`,
        elsewhere,
      );
      return out.stdout.includes(jobId) ? out : undefined;
    });
    expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: "" });
    // In the folder of `up`: the operator token is all it needs (./.data/hub.json has the address).
    const operatorToken = exports[2]?.split("=")[1] ?? "";
    const local = await sh(`$SY jobs show ${jobId}`, dir, {
      SWITCHYARD_OPERATOR_TOKEN: operatorToken,
    });
    expect({ code: local.code, stderr: local.stderr }).toEqual({ code: 0, stderr: "" });
    expect((JSON.parse(local.stdout) as { job: { job_id: string } }).job.job_id).toBe(jobId);
    // On a terminal: a table whose first row names the columns.
    const tty = await sh(`script -qec "$SY jobs list --where request_id=disc-1" /dev/null`, dir, {
      SWITCHYARD_OPERATOR_TOKEN: operatorToken,
    });
    const rows = tty.stdout.replace(/\r/g, "").trim().split("\n");
    expect(rows[0]?.split(/\s+/)).toEqual([
      "JOB",
      "CLIENT",
      "ROUTE",
      "STATUS",
      "ERROR",
      "CALLBACK",
      "CREATED",
    ]);
    expect(rows[1]).toStartWith(jobId);
  });

  test("hub.json names the API and the monitoring address apart", async () => {
    const hub = (await Bun.file(join(dir, ".data/hub.json")).json()) as Record<string, unknown>;
    expect(Object.keys(hub)).toContain("monitoring_url");
    expect(Object.keys(hub)).not.toContain("admin_url");
    expect((await fetch(`${hub.monitoring_url}/metrics`)).status).toBe(200);
    expect((await fetch(`${hub.api_url}/admin/v1/jobs`)).status).toBe(401);
  });
});
