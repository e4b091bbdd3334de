/**
 * The SDK as users get it: `npm pack` output (what it contains), its declarations under tsc and
 * Deno's checker, and the installed package run on Node (the machine's, >= 20), Bun and Deno
 * against a real hub.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { type SdkHub, startSdkHub } from "./hub.ts";
import { bin, expectSuccess, type PackedSdk, packedSdk, REPO, runCommand } from "./packed.ts";

const SMOKE = join(REPO, "tests/sdk/runtime/smoke.mjs");
const CONSUMER_TS = `
import {
  createSwitchyardClient,
  type CancelResult,
  type Job,
  type JobPage,
  type RunResult,
  SwitchyardApiError,
  verifyCallback,
  type JobCompletedEvent,
} from "@switchyard/sdk";

const client = createSwitchyardClient({ baseUrl: "https://hub.example", token: "t" });
export async function use(): Promise<[RunResult, Job, JobPage, CancelResult]> {
  const run = await client.run({ request_id: "r", route: "demo.echo", input: "x" });
  const page = await client.listJobs({ status: ["done"], createdAfter: new Date(), limit: 10 });
  for await (const job of client.iterateJobs({ route: "demo.echo" })) job.status satisfies string;
  return [run, await client.waitForJob(run.job.job_id), page, await client.cancelJob("j")];
}
export function onCallback(body: string, headers: Headers): JobCompletedEvent | string {
  try {
    return verifyCallback(body, headers, ["whsec_x"]);
  } catch (err) {
    return err instanceof SwitchyardApiError ? err.code : String(err);
  }
}
// @ts-expect-error: request_id is required
void client.run({ route: "demo.echo", input: "x" });
`;

let packed: PackedSdk;
beforeAll(async () => {
  packed = await packedSdk();
  await Bun.write(join(packed.consumerDir, "consumer.ts"), CONSUMER_TS);
}, 120_000);
afterAll(() => packed.cleanup());

describe("npm pack", () => {
  test("holds the built modules with their declarations, and nothing else", async () => {
    const sources = (await readdir(join(REPO, "sdk/src"))).filter((f) => f.endsWith(".ts"));
    const expected = sources.flatMap((f) => {
      const base = f.replace(/\.ts$/, "");
      return [`dist/${base}.d.ts`, `dist/${base}.js`];
    });
    expect(packed.files).toEqual([...expected, "package.json"].sort());
  });

  test("the manifest: ESM, an exports map with types first, no runtime dependencies", async () => {
    const manifest = await Bun.file(
      join(packed.consumerDir, "node_modules/@switchyard/sdk/package.json"),
    ).json();
    expect(manifest.type).toBe("module");
    expect(Object.keys(manifest.exports["."])).toEqual(["types", "default"]);
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.engines.node).toBe(">=20");
  });

  test("builds with its own devDependencies, pinned as the repository's root pins them", async () => {
    // sdk/ is not a workspace: its build resolves tsc from the root install, so a drift between
    // the two manifests would build with one version and declare another.
    const sdkManifest = await Bun.file(join(REPO, "sdk/package.json")).json();
    const root = await Bun.file(join(REPO, "package.json")).json();
    const names = ["@types/node", "typescript"];
    expect(Object.keys(sdkManifest.devDependencies).sort()).toEqual(names);
    for (const name of names) {
      expect(sdkManifest.devDependencies[name]).toBe(root.devDependencies[name]);
    }
  });
});

describe("the declarations", () => {
  test.each(["NodeNext", "Bundler"])(
    "type-check a consumer with tsc (%s resolution)",
    async (resolution) => {
      const ran = await runCommand(
        [
          bin("tsc"),
          "--noEmit",
          "--strict",
          "--target",
          "ES2022",
          "--lib",
          "ES2022,DOM",
          "--module",
          resolution === "NodeNext" ? "NodeNext" : "ESNext",
          "--moduleResolution",
          resolution,
          "--types",
          "node",
          "--typeRoots",
          join(REPO, "node_modules/@types"),
          "consumer.ts",
        ],
        { cwd: packed.consumerDir },
      );
      expectSuccess(ran);
    },
  );

  test("type-check a consumer with deno check", async () => {
    const ran = await runCommand([bin("deno"), "check", "consumer.ts"], {
      cwd: packed.consumerDir,
      env: { DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1" },
    });
    expectSuccess(ran);
  });
});

describe("the installed package against a real hub", () => {
  let sdk: SdkHub;
  beforeAll(async () => {
    sdk = await startSdkHub();
  });
  afterAll(() => sdk.stop());

  const runtimes: [string, () => string[]][] = [
    ["node", () => ["node", SMOKE]],
    ["bun", () => [bin("bun"), SMOKE]],
    [
      "deno",
      () => [bin("deno"), "run", "--allow-net=127.0.0.1", "--allow-env", "--allow-read", SMOKE],
    ],
  ];
  test.each(runtimes)("on %s", async (_name, command) => {
    // smoke.mjs lives in the repository; a copy beside node_modules resolves the installed package.
    const script = join(packed.consumerDir, "smoke.mjs");
    await Bun.write(script, Bun.file(SMOKE));
    const cmd = command().map((part) => (part === SMOKE ? script : part));
    const ran = await runCommand(cmd, {
      cwd: packed.consumerDir,
      timeoutMs: 60_000,
      env: {
        SY_BASE_URL: sdk.baseUrl,
        SY_PROXY_URL: sdk.proxy.url,
        SY_TOKEN: sdk.clients.acme.token,
        SY_OTHER_TOKEN: sdk.clients.globex.token,
        SY_SECRETS: JSON.stringify(sdk.clients.acme.secrets),
        DENO_NO_UPDATE_CHECK: "1",
        NO_COLOR: "1",
      },
    });
    expectSuccess(ran);
    const plan = /^1\.\.(\d+)$/m.exec(ran.stdout)?.[1];
    const oks = ran.stdout.split("\n").filter((line) => line.startsWith("ok ")).length;
    expect(plan).toBeDefined();
    expect(oks).toBe(Number(plan));
  });

  test("node is the one the package promises to support (>= 20)", async () => {
    const ran = await runCommand(["node", "--version"], { cwd: REPO });
    expect(Number(/^v(\d+)\./.exec(ran.stdout)?.[1])).toBeGreaterThanOrEqual(20);
  });
});
