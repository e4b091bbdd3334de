import { afterAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hashToken } from "../../shared/auth/index.ts";
import { runToEnd } from "../helpers/run.ts";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function serveWith(yaml: string, env: Record<string, string> = {}) {
  const dir = await mkdtemp(join(tmpdir(), "switchyard-start-"));
  dirs.push(dir);
  const path = join(dir, "switchyard.yaml");
  await writeFile(path, yaml);
  const { NATS_URL: _, ...rest } = process.env;
  const started = Date.now();
  const { stdout, stderr, code } = await runToEnd([process.execPath, MAIN, "serve", "ingress"], {
    cwd: dir,
    env: { ...rest, SWITCHYARD_CONFIG: path, ...env },
  });
  return { stdout, stderr, code, ms: Date.now() - started };
}

const CLIENT = `clients:
  - id: acme
    token_sha256: ["${hashToken("t")}"]
    routes: ["*"]`;

describe("start-up against an unreachable NATS", () => {
  test("names the URL, counts down visibly, exits 1 after nats.connect_timeout", async () => {
    const result = await serveWith(
      `server: { port: 0 }\nmonitoring: { port: 0 }\nnats: { url: "nats://127.0.0.1:1", connect_timeout: 4s }\n${CLIENT}\n`,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("cannot reach NATS at nats://127.0.0.1:1");
    expect(result.stderr).toContain("nats.connect_timeout");
    const waits = result.stdout
      .split("\n")
      .filter((l) => l.includes("not reachable"))
      .map((l) => JSON.parse(l) as { url: string; gives_up_in_s: number; retry_in_s: number });
    expect(waits.length).toBeGreaterThanOrEqual(2);
    expect(waits.every((w) => w.url === "nats://127.0.0.1:1")).toBe(true);
    // The countdown goes down, and the whole wait is bounded.
    const left = waits.map((w) => w.gives_up_in_s);
    expect(left).toEqual([...left].sort((a, b) => b - a));
    expect(left[0]).toBeLessThanOrEqual(4);
    expect(result.ms).toBeLessThan(15_000);
  });
});

describe("the whole configuration is checked before connecting", () => {
  test("every problem at once, each with its key and what is expected; no connection attempted", async () => {
    const yaml = `
server: { port: 0, max_url_length: 10 }
monitoring: { port: 0 }
nats: { url: "nats://127.0.0.1:1", connect_timeout: 60s }
callbacks: { allow_cidrs: ["10.0.0.1/8", "not-a-cidr"] }
clients:
  - id: acme
    token_sha256: ["${hashToken("t")}"]
    routes: ["*"]
    callback_secrets: ["whsec_dG9vIHNob3J0"]
  - id: acme
    token_sha256: ["nothex"]
    routes: ["*"]
    callback_secrets: ["\${NOT_SET_ANYWHERE}"]
routes:
  - key: demo.echo
    executor: { kind: http, url: "http://127.0.0.1:9/x", secret: "whsec_c2hvcnQ=" }
`;
    const result = await serveWith(yaml);
    expect(result.code).toBe(1);
    for (const expected of [
      "server.max_url_length: expected integer to be greater or equal to 256",
      'callbacks.allow_cidrs[0]: invalid CIDR "10.0.0.1/8": host bits are set; did you mean 10.0.0.0/8?',
      'callbacks.allow_cidrs[1]: invalid CIDR "not-a-cidr"',
      "clients[0].callback_secrets[0]: webhook secret must decode to 24–64 bytes, got 9",
      "clients[1].token_sha256[0]: must match ^[0-9a-f]{64}$",
      "clients[1].callback_secrets[0]: environment variable NOT_SET_ANYWHERE is not set",
      "routes[0].executor.secret: webhook secret must decode to 24–64 bytes, got 5",
    ]) {
      expect(result.stderr).toContain(expected);
    }
    expect(result.stderr).not.toContain("    at "); // no stack trace
    expect(result.stdout).not.toContain("not reachable"); // it never tried NATS
    expect(result.ms).toBeLessThan(10_000);
  });
});
