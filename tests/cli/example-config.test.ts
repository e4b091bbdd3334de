/**
 * examples/switchyard.yaml starts as is and works: `switchyard up` with the file unchanged, on the
 * ports it names, runs a job through its HTTP route (the executor verifies the signed POST, acme's
 * receiver the signed callback) and its NATS route (the example worker), and the example operator
 * lists jobs. The fixed ports (8080, 9090, 9301) are taken in a network namespace of its own
 * (`unshare -rn`, an unprivileged user and network namespace with only loopback), so whatever
 * else listens on this machine does not matter. The steps are in fixtures/example-setup.ts.
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "../..");
let workDir = "";

afterAll(() => rm(workDir, { recursive: true, force: true }));

test("the example config starts as is and runs a job through each route", async () => {
  workDir = await mkdtemp(join(tmpdir(), "switchyard-example-"));
  const proc = Bun.spawn(
    [
      "unshare",
      "-rn",
      "sh",
      "-c",
      'ip link set lo up && exec "$@"',
      "sh",
      process.execPath,
      join(import.meta.dir, "fixtures/example-setup.ts"),
      ROOT,
      workDir,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  const seen = JSON.parse(stdout.trim()) as {
    http: { accepted: number; job_id: string; status: string; output: unknown };
    tasks: { verified: boolean }[];
    callbacks: { type: string; status: string }[];
    nats: { accepted: number; status: string; output: unknown };
    operator: { status: number; jobs: string[] };
    metrics: number;
  };
  expect(seen.http).toMatchObject({ accepted: 202, status: "done", output: "rendered invoice 42" });
  expect(seen.tasks).toEqual([{ verified: true }]);
  expect(seen.callbacks).toEqual([{ type: "job.completed", status: "done" }]);
  expect(seen.nats).toMatchObject({ accepted: 202, status: "done", output: "q3" });
  expect(seen.operator).toEqual({ status: 200, jobs: [seen.http.job_id] });
  expect(seen.metrics).toBe(200);
}, 120_000);
