import { afterAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError } from "../../shared/config/index.ts";
import { type SecurityHub, startSecurityHub } from "./hub.ts";
import { expectProblem } from "./problem.ts";

const ACME = { id: "acme", token: "acme-token-0123456789abcdef" };
const bigRoute = (maxInputBytes: number) => `
routes:
  - key: demo.echo
    max_input_bytes: ${maxInputBytes}
    executor: { kind: builtin, name: echo }
`;
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** 256 metadata members whose numbers come back 5 times longer than sent (1e20 → 21 digits). */
const EXPANDING_METADATA = Object.fromEntries(
  Array.from({ length: 256 }, (_, i) => [`m${String(i).padStart(3, "0")}`, "@@"]),
);

/** A run body of exactly `bytes` bytes whose metadata grows when stored. */
function bodyOfSize(bytes: number, requestId: string): string {
  const meta = JSON.stringify(EXPANDING_METADATA).replaceAll('"@@"', "1e20");
  const shell = `{"request_id":"${requestId}","route":"demo.echo","metadata":${meta},"input":""}`;
  const fill = bytes - Buffer.byteLength(shell);
  return shell.replace('"input":""', `"input":"${"x".repeat(fill)}"`);
}

const post = (hub: SecurityHub, text: string) =>
  fetch(`${hub.baseUrl}/run`, {
    method: "POST",
    headers: { authorization: `Bearer ${ACME.token}`, "content-type": "application/json" },
    body: text,
  });

async function natsConfig(maxPayload: string): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), "sy-nats-conf-"));
  dirs.push(dir);
  const file = join(dir, "nats.conf");
  await writeFile(file, `max_payload: ${maxPayload}\n`);
  return ["-c", file];
}

describe("the body limit and NATS max_payload are derived from each other", () => {
  test("unset: the limit leaves room for the event; a body at the limit is stored, never a 500", async () => {
    await using hub = await startSecurityHub({ clients: [ACME], yaml: bigRoute(8_388_608) });
    const limit = hub.maxBodyBytes;
    expect(limit).toBeLessThan(1_048_576);
    expect(limit).toBeGreaterThan(1_000_000);
    const atLimit = await post(hub, bodyOfSize(limit, "at-limit"));
    expect(atLimit.status).toBe(202);
    // Just under the old 1 MiB default, which ended in a 500 (the event did not fit).
    const old = await post(hub, bodyOfSize(1_048_575, "under-old-limit"));
    await expectProblem(old, 413, "payload_too_large");
  });

  test("configured above what max_payload allows: start-up stops naming server.max_body_bytes", async () => {
    const started = startSecurityHub({
      clients: [ACME],
      server: { max_body_bytes: 1_048_576 },
    });
    const err = await started.then(
      async (hub) => {
        await hub.stop();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as ConfigError).message;
    expect(message).toContain("server.max_body_bytes");
    expect(message).toContain("max_payload");
    expect(message).toMatch(/at most \d+/);
  });

  test("a larger max_payload allows a larger configured limit, used to the byte", async () => {
    await using hub = await startSecurityHub({
      clients: [ACME],
      server: { max_body_bytes: 2_097_152 },
      yaml: bigRoute(2_097_152),
      natsArgs: await natsConfig("4MB"),
    });
    expect((await post(hub, bodyOfSize(2_097_152, "two-mib"))).status).toBe(202);
    await expectProblem(await post(hub, bodyOfSize(2_097_153, "over")), 413, "payload_too_large");
  });
});

describe("executor answer caps are checked against max_payload too", () => {
  test("a cap whose output cannot fit one NATS message stops start-up naming the route's key", async () => {
    const yaml = `
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
  - key: demo.http
    executor:
      kind: http
      url: http://127.0.0.1:9/task
      secret: "whsec_${Buffer.alloc(32, 7).toString("base64")}"
      max_response_bytes: 2097152
`;
    const err = await startSecurityHub({
      clients: [ACME],
      yaml,
      services: ["ingress", "executor"],
    }).then(
      async (hub) => {
        await hub.stop();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).message).toContain("routes[1].executor.max_response_bytes");
    expect((err as ConfigError).message).toMatch(/at most \d+/);
  });
});
