import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFile } from "node:fs/promises";
import { hashToken } from "../../shared/auth/index.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { startUp, type UpProcess } from "../helpers/up-process.ts";
import { waitFor } from "../helpers/wait.ts";

// Operator credentials follow reloads like client credentials (rotation.test.ts), against a
// running `switchyard up`: a removed operator's token and console sessions stop working, a new
// operator's token starts working, a replaced token hash ends the sessions made from it, and an
// invalid file changes nothing.

const CLIENT_TOKEN = "sy_acme_client-token-0123456789abcdef";
const ALICE = "sy_op_alice-token-0123456789abcdef";
const BOB_OLD = "sy_op_bob-old-token-0123456789abcdef";
const BOB_NEW = "sy_op_bob-new-token-0123456789abcdef";
const CAROL = "sy_op_carol-token-0123456789abcdef";

let nats: TestNats;
let up: UpProcess;
let base = "";

const operator = (id: string, token: string, role = "operator") =>
  `  - { id: ${id}, role: ${role}, token_sha256: ["${hashToken(token)}"] }`;

function configYaml(operators: readonly string[]): string {
  return `
server: { host: 127.0.0.1, port: 0 }
monitoring: { host: 127.0.0.1, port: 0 }
log: { level: info }
console: { enabled: true, secure_cookie: false }
clients:
  - id: acme
    routes: ["demo.*"]
    token_sha256: ["${hashToken(CLIENT_TOKEN)}"]
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
operators:
${operators.join("\n")}
`;
}

const logLines = () => up.logLines();

const reloadLines = () => logLines().filter((l) => l.msg === "configuration reloaded");

/**
 * Writes the config file (and sends SIGHUP when asked); the log line of the reload that changed
 * operators. (The watcher may also reload the same file once more, with nothing changed.)
 */
async function rewriteAndWait(yaml: string, signal?: "SIGHUP"): Promise<Record<string, unknown>> {
  const before = reloadLines().length;
  await writeFile(up.configFile, yaml);
  if (signal) up.proc.kill(signal);
  return waitFor(
    "the configuration to be reloaded",
    () =>
      reloadLines()
        .slice(before)
        .find((l) => (l.operators_changed as unknown[]).length > 0),
    { timeoutMs: 15_000 },
  );
}

/** The operator id GET /admin/v1/session answers for these headers, or the refusal's status. */
async function whoAmI(headers: Record<string, string>): Promise<string | number> {
  const res = await fetch(`${base}/admin/v1/session`, { headers });
  if (res.status !== 200) {
    expect(res.headers.get("content-type")).toBe("application/problem+json");
    return res.status;
  }
  return ((await res.json()) as { operator: { id: string } }).operator.id;
}

const bearer = (token: string) => whoAmI({ authorization: `Bearer ${token}` });
const session = (cookie: string) => whoAmI({ cookie });

/** Logs in to the console with an operator token; the session cookie ("name=value"). */
async function login(token: string): Promise<string> {
  const res = await fetch(`${base}/console/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  expect(res.status).toBe(204);
  return res.headers.getSetCookie()[0]?.split(";")[0] ?? "";
}

const sessions = { alice: "", bob: "" };
const INITIAL = [operator("alice", ALICE), operator("bob", BOB_OLD)];

beforeAll(async () => {
  nats = await startNats();
  up = await startUp({
    natsUrl: nats.url,
    yaml: configYaml(INITIAL),
    prefix: "switchyard-operator-rotation-",
  });
  base = await up.listening();
  // The file watcher starts after the services, later than "ingress listening": a change made
  // before it took its first look would never be seen. Rewrite the unchanged file until a reload
  // shows that it watches (checked every 2 s, so one rewrite per 3 s at most).
  await waitFor(
    "the config file watcher to be armed",
    async () => {
      if (reloadLines().length > 0) return true;
      await writeFile(up.configFile, configYaml(INITIAL));
      return false;
    },
    { timeoutMs: 30_000, intervalMs: 3_000 },
  );
  expect(reloadLines()[0]?.operators_changed).toEqual([]);
});

afterAll(async () => {
  await up?.stop();
  await nats?.stop();
});

describe("operator credential rotation without a restart", () => {
  test("before: alice and bob authenticate and hold console sessions; carol is unknown", async () => {
    expect(await bearer(ALICE)).toBe("alice");
    expect(await bearer(BOB_OLD)).toBe("bob");
    expect(await bearer(CAROL)).toBe(401);
    sessions.alice = await login(ALICE);
    sessions.bob = await login(BOB_OLD);
    expect(await session(sessions.alice)).toBe("alice");
    expect(await session(sessions.bob)).toBe("bob");
  });

  test("a changed file: alice is removed (token and session end), carol is added", async () => {
    const line = await rewriteAndWait(
      configYaml([operator("bob", BOB_OLD), operator("carol", CAROL, "viewer")]),
    );
    expect(line.operators_changed).toEqual(["alice", "carol"]);
    expect(line.needs_restart).toEqual([]);
    expect(await bearer(ALICE)).toBe(401);
    expect(await session(sessions.alice)).toBe(401);
    expect(await bearer(CAROL)).toBe("carol");
    // Only the removed operator's sessions end.
    expect(await session(sessions.bob)).toBe("bob");
    // A removed operator cannot log in again either.
    const res = await fetch(`${base}/console/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: ALICE }),
    });
    expect(res.status).toBe(401);
  });

  test("SIGHUP: bob's token is replaced; the old one and the session made from it end", async () => {
    const line = await rewriteAndWait(
      configYaml([operator("bob", BOB_NEW), operator("carol", CAROL, "viewer")]),
      "SIGHUP",
    );
    expect(
      logLines().some((l) => l.msg === "reloading configuration" && l.reason === "SIGHUP"),
    ).toBe(true);
    expect(line.operators_changed).toEqual(["bob"]);
    expect(await bearer(BOB_OLD)).toBe(401);
    expect(await session(sessions.bob)).toBe(401);
    expect(await bearer(BOB_NEW)).toBe("bob");
    expect(await session(await login(BOB_NEW))).toBe("bob");
  });

  test("an invalid file changes nothing and says why", async () => {
    // An operator token that is also a client's token is refused (docs/operations.md).
    await writeFile(up.configFile, configYaml([operator("dave", CLIENT_TOKEN)]));
    up.proc.kill("SIGHUP");
    const line = await waitFor(
      "the refusal",
      () =>
        logLines().find(
          (l) => l.msg === "reloaded configuration is invalid; the running one stays",
        ),
      { timeoutMs: 15_000 },
    );
    expect(JSON.stringify(line.issues)).toContain("operators[0].token_sha256[0]");
    expect(await bearer(BOB_NEW)).toBe("bob");
    expect(await bearer(CAROL)).toBe("carol");
    expect(await bearer(CLIENT_TOKEN)).toBe(401);
  });
});
