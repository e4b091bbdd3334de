/**
 * `switchyard token new`: client ids as before, operator ids with `.` and `@` (refused before
 * with "a client id is [A-Za-z0-9_-]"), and the printed snippet is accepted by the config as is.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { parseConfig } from "../../shared/config/index.ts";
import { DEFAULT_CLIENTS, hubYaml } from "../helpers/hub.ts";
import { runToEnd } from "../helpers/run.ts";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");

async function tokenNew(...args: string[]) {
  const { stdout, stderr, code } = await runToEnd([
    process.execPath,
    MAIN,
    "token",
    "new",
    ...args,
  ]);
  const token = /token \(shown once[^:]*\): (\S+)/.exec(stdout)?.[1] ?? "";
  // The printed lines from the section name on: YAML to paste.
  const snippet = stdout.slice(stdout.search(/^(clients|operators):$/m)).split("\n(")[0] ?? "";
  return { code, stdout, stderr, token, snippet };
}

const sha256 = (text: string) => new Bun.CryptoHasher("sha256").update(text).digest("hex");

describe("token new", () => {
  test("an operator id with '.' and '@': a token and an operators entry the config accepts", async () => {
    const out = await tokenNew("olivia@ops.example");
    expect({ code: out.code, stderr: out.stderr }).toEqual({ code: 0, stderr: "" });
    expect(out.stdout).toContain("give it to the operator");
    expect(out.token).toMatch(/^sy_olivia-ops-example_[A-Za-z0-9_-]{43}$/);
    const config = parseConfig(
      hubYaml("nats://127.0.0.1:1", DEFAULT_CLIENTS, out.snippet),
      {},
      "test config",
    );
    expect(config.operators.map((o) => [o.id, o.token_sha256])).toEqual([
      ["olivia@ops.example", [sha256(out.token)]],
    ]);
  });

  test("--operator makes an operator entry for an id a client could have too", async () => {
    const out = await tokenNew("oncall", "--operator");
    expect(out.code).toBe(0);
    const config = parseConfig(
      hubYaml("nats://127.0.0.1:1", DEFAULT_CLIENTS, out.snippet),
      {},
      "test config",
    );
    expect(config.operators.map((o) => [o.id, o.token_sha256])).toEqual([
      ["oncall", [sha256(out.token)]],
    ]);
  });

  test("a client id: a clients entry, as before", async () => {
    const out = await tokenNew("acme-2");
    expect(out.code).toBe(0);
    expect(out.token).toStartWith("sy_acme-2_");
    expect(out.snippet).toStartWith("clients:\n  - id: acme-2\n");
    expect(out.snippet).toContain(`token_sha256: ["${sha256(out.token)}"]`);
  });

  test("ids that are neither: exit 2 naming what an id may hold", async () => {
    const results = await Promise.all([
      tokenNew("has space"),
      tokenNew("x".repeat(65)),
      tokenNew("olivia+ops@example", "--operator"),
    ]);
    expect(results.map((r) => [r.code, r.stderr.split("\n")[0], r.stdout])).toEqual([
      [
        2,
        "switchyard: an id is [A-Za-z0-9_-] for a client, [A-Za-z0-9_.@-] for an operator, up to 64 characters",
        "",
      ],
      [
        2,
        "switchyard: an id is [A-Za-z0-9_-] for a client, [A-Za-z0-9_.@-] for an operator, up to 64 characters",
        "",
      ],
      [2, "switchyard: an operator id is [A-Za-z0-9_.@-], up to 64 characters", ""],
    ]);
  });
});
