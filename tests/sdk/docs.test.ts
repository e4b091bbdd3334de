/**
 * Runs the examples of docs/sdk.md against a real hub: the TypeScript ones from a project that
 * installed the packed SDK (type-checked with tsc, run with Bun), the Python ones with python3.
 * Every code example of the page must carry an `<!-- example: NAME -->` marker, so none goes
 * untested.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer } from "node:net";
import { join } from "node:path";
import { createSwitchyardClient, type JobStatus, newRequestId } from "../../sdk/src/index.ts";
import { waitFor } from "../helpers/wait.ts";
import { type SdkHub, startSdkHub } from "./hub.ts";
import { bin, expectSuccess, type PackedSdk, packedSdk, REPO, runCommand } from "./packed.ts";

interface Example {
  readonly name: string;
  readonly lang: "ts" | "python";
  readonly code: string;
}

const DOC = await Bun.file(join(REPO, "docs/sdk.md")).text();
const EXAMPLES: Example[] = [
  ...DOC.matchAll(/<!-- example: (\S+)[^>]*-->\n```(ts|python)\n([\s\S]*?)\n```/g),
].map((m) => ({ name: m[1] ?? "", lang: m[2] as Example["lang"], code: m[3] ?? "" }));

const PYTHONPATH = join(REPO, "sdk/python/src");

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== "object" || !address) throw new Error("no port");
  return address.port;
}

/**
 * What the list/cancel examples act on: one job of acme's that failed (cancelled: demo.slow has
 * no worker, so its jobs wait) and two that wait, each listed by the search index as such before
 * the example runs, since the examples read the index.
 */
async function listCancelJobs(): Promise<{ failed: string; waiting: string[] }> {
  const client = createSwitchyardClient({ baseUrl: sdk.baseUrl, token: sdk.clients.acme.token });
  const submit = async () =>
    (await client.run({ request_id: newRequestId(), route: "demo.slow", input: "x" })).job.job_id;
  const failed = await submit();
  await client.cancelJob(failed);
  const waiting = [await submit(), await submit()];
  const listed = async (status: JobStatus[], ids: string[]) => {
    const page = await client.listJobs({ route: "demo.slow", status, limit: 500 });
    return ids.every((id) => page.jobs.some((j) => j.job_id === id));
  };
  await waitFor("the index to list the failed and the waiting jobs", async () => {
    return (
      (await listed(["error"], [failed])) &&
      (await listed(["queued", "dispatched", "running"], waiting))
    );
  });
  return { failed, waiting };
}

let sdk: SdkHub;
let packed: PackedSdk;
let env: Record<string, string>;
beforeAll(async () => {
  [sdk, packed] = await Promise.all([startSdkHub(), packedSdk()]);
  env = {
    SWITCHYARD_URL: sdk.baseUrl,
    SWITCHYARD_TOKEN: sdk.clients.acme.token,
    // The hub signs with both of acme's secrets; the receivers are given the newer one.
    SWITCHYARD_WEBHOOK_SECRET: sdk.clients.acme.secrets[1] ?? "",
    PYTHONPATH,
    PYTHONDONTWRITEBYTECODE: "1",
    PYTHONUNBUFFERED: "1",
  };
  for (const e of EXAMPLES) {
    await Bun.write(join(packed.consumerDir, `${e.name}.${e.lang === "ts" ? "ts" : "py"}`), e.code);
  }
}, 120_000);
// The ingress's graceful stop can wait out its grace period (publish_timeout + 2 s) for a
// keep-alive connection a request just used.
afterAll(async () => {
  await sdk?.stop();
  await packed?.cleanup();
}, 30_000);

test("every code example of docs/sdk.md is marked, so it is tested", () => {
  const blocks = [...DOC.matchAll(/^```(ts|python)$/gm)].length;
  expect(EXAMPLES.length).toBe(blocks);
  expect(EXAMPLES.map((e) => e.name).sort()).toEqual(
    [
      "py-callback-server",
      "py-list-cancel",
      "py-run",
      "ts-callback-server",
      "ts-list-cancel",
      "ts-run",
    ].sort(),
  );
});

test("docs/sdk.md shows the real base URL and the hub's error codes", () => {
  // The API is served at the root: no base URL with a /v1 path.
  expect(DOC.match(/https?:\/\/\S*\/v1\b/g)).toBeNull();
  expect(DOC).not.toContain("idempotency_conflict");
  expect(DOC).not.toContain("validation_failed");
  expect(DOC).toContain("request_id_conflict");
});

test("the TypeScript examples type-check against the installed package", async () => {
  const files = EXAMPLES.filter((e) => e.lang === "ts").map((e) => `${e.name}.ts`);
  const ran = await runCommand(
    [
      bin("tsc"),
      "--noEmit",
      "--strict",
      "--target",
      "ES2022",
      "--module",
      "NodeNext",
      "--moduleResolution",
      "NodeNext",
      "--types",
      "node",
      "--typeRoots",
      join(REPO, "node_modules/@types"),
      ...files,
    ],
    { cwd: packed.consumerDir },
  );
  expectSuccess(ran);
}, 60_000);

describe("run against a real hub", () => {
  test("ts-run submits, waits and prints the output", async () => {
    const ran = await runCommand([bin("bun"), "ts-run.ts"], { cwd: packed.consumerDir, env });
    expectSuccess(ran);
    expect(ran.stdout).toMatch(/^true job_\S+ Summarise ticket 4711$/m);
  }, 60_000);

  test("py-run submits, waits, prints the output and the not-found code", async () => {
    const ran = await runCommand(["python3", "py-run.py"], { cwd: packed.consumerDir, env });
    expectSuccess(ran);
    expect(ran.stdout).toBe("True done Summarise ticket 4711\njob_not_found\n");
  }, 60_000);

  test.each([
    ["ts-list-cancel", () => [bin("bun"), "ts-list-cancel.ts"]],
    ["py-list-cancel", () => ["python3", "py-list-cancel.py"]],
  ])(
    "%s lists the failed jobs and cancels the unfinished ones of its route",
    async (_name, command) => {
      const { failed, waiting } = await listCancelJobs();
      const ran = await runCommand(command(), { cwd: packed.consumerDir, env });
      expectSuccess(ran);
      expect(ran.stdout).toContain(`failed ${failed} demo.slow cancelled\n`);
      for (const id of waiting) expect(ran.stdout).toContain(`cancel ${id} cancelling\n`);
      const client = createSwitchyardClient({
        baseUrl: sdk.baseUrl,
        token: sdk.clients.acme.token,
      });
      // The cancel's answer is final at once; GET serves the projector's view, which follows
      // the stream within milliseconds (docs/api.md, "GET /jobs/{job_id}").
      for (const id of waiting) {
        const job = await waitFor(`job ${id}'s view to show the cancel`, async () => {
          const seen = await client.getJob(id);
          return seen.status === "error" ? seen : undefined;
        });
        expect(job).toMatchObject({ status: "error", error: { code: "cancelled" } });
      }
    },
    60_000,
  );

  test.each([
    ["ts-callback-server", () => [bin("bun"), "ts-callback-server.ts"]],
    ["py-callback-server", () => ["python3", "py-callback-server.py"]],
  ])(
    "%s verifies a callback the hub sent and refuses a forged one",
    async (_name, command) => {
      const port = await freePort();
      const server = Bun.spawn(command(), {
        cwd: packed.consumerDir,
        env: { ...process.env, ...env, PORT: String(port) },
        stdout: "pipe",
        stderr: "pipe",
      });
      let stdout = "";
      void (async () => {
        for await (const chunk of server.stdout) stdout += new TextDecoder().decode(chunk);
      })();
      try {
        const url = `http://127.0.0.1:${port}/hook`;
        const refused = await waitFor("the example server to listen", async () => {
          const r = await fetch(url, { method: "POST", body: "{}" });
          return r.status === 401 ? await r.text() : undefined;
        });
        expect(refused).toBe("missing_header");
        const client = createSwitchyardClient({
          baseUrl: sdk.baseUrl,
          token: sdk.clients.acme.token,
        });
        const { job } = await client.run({
          request_id: newRequestId(),
          route: "demo.echo",
          input: "hi",
          callback_url: url,
        });
        await waitFor("the verified callback", () =>
          stdout.includes(`verified job.completed ${job.job_id} done`),
        );
        const forged = await fetch(url, {
          method: "POST",
          body: "{}",
          headers: {
            "webhook-id": "msg_forged",
            "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
            "webhook-signature": "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
          },
        });
        expect([forged.status, await forged.text()]).toEqual([401, "no_matching_signature"]);
      } finally {
        server.kill();
        await server.exited;
      }
    },
    60_000,
  );
});
