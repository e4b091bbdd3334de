import { describe, expect, test } from "bun:test";
import {
  activeClient,
  ConfigError,
  createClientDirectory,
  parseConfig,
  parseDuration,
  routeAllowed,
} from "../../shared/config/index.ts";

const HASH = "a".repeat(64);
/** A quoted `${NAME}` reference as it appears in a config file. */
const ENV_REF = (name: string) => `"$\{${name}}"`;
const minimal = `
clients:
  - id: acme
    token_sha256: ["${HASH}"]
    routes: ["demo.*"]
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
`;

function issuesOf(text: string, env: Record<string, string> = {}): string[] {
  try {
    parseConfig(text, env, "test.yaml");
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues.map((i) => `${i.key}: ${i.message}`);
  }
  throw new Error("expected a ConfigError");
}

describe("config loader", () => {
  test("applies defaults", () => {
    const config = parseConfig(minimal, {});
    expect(config.server.port).toBe(8080);
    expect(config.nats.replicas).toBe(1);
    expect(config.nats.events_max_age).toBe("30d");
    expect(config.routes[0]?.enabled).toBe(true);
    expect(config.routes[0]?.max_input_bytes).toBe(65536);
    expect(config.clients[0]?.runs_per_minute).toBe(600);
  });

  test("substitutes environment references", () => {
    const text = minimal.replace(`"${HASH}"`, ENV_REF("ACME_HASH"));
    const config = parseConfig(text, { ACME_HASH: "b".repeat(64) });
    expect(config.clients[0]?.token_sha256).toEqual(["b".repeat(64)]);
  });

  test("a missing environment variable names the key that used it", () => {
    const text = minimal.replace(`"${HASH}"`, ENV_REF("NOPE"));
    expect(issuesOf(text)).toEqual([
      "clients[0].token_sha256[0]: environment variable NOPE is not set",
    ]);
  });

  test("a bad value names its key and the rule", () => {
    const issues = issuesOf(minimal.replace(`"${HASH}"`, '"not-a-hash"'));
    expect(issues).toEqual(["clients[0].token_sha256[0]: must match ^[0-9a-f]{64}$"]);
  });

  test("an unknown key is named", () => {
    const issues = issuesOf(`${minimal}\nbogus: 1\n`);
    expect(issues.some((i) => i.startsWith("bogus"))).toBe(true);
  });

  test("wrong types and enum values are named", () => {
    expect(issuesOf(`${minimal}\nserver: { port: "eighty" }\n`)[0]).toStartWith("server.port:");
    expect(issuesOf(minimal.replace("name: echo", "name: nope"))[0]).toStartWith(
      "routes[0].executor",
    );
    expect(issuesOf(`${minimal}\nnats: { events_max_age: 30 days }\n`)[0]).toStartWith(
      "nats.events_max_age:",
    );
  });

  test("duplicate ids, and clients without credentials, are refused", () => {
    const second = `  - id: acme\n    token_sha256: ["${HASH}"]\n    routes: ["*"]\nroutes:\n  - key`;
    const dup = minimal.replace("routes:\n  - key", second);
    expect(issuesOf(dup)).toContain("clients[1].id: duplicate client id (also clients[0])");
    const none = minimal.replace(`token_sha256: ["${HASH}"]`, "token_sha256: []");
    expect(issuesOf(none)).toEqual(["clients[0]: needs token_sha256 or jwt to authenticate"]);
  });

  test("invalid YAML is reported as such", () => {
    expect(issuesOf("clients: [")[0]).toStartWith("(file): not valid YAML");
  });

  test("durations", () => {
    expect(parseDuration("500ms")).toBe(500);
    expect(parseDuration("2m")).toBe(120_000);
    expect(parseDuration("30d")).toBe(2_592_000_000);
    expect(() => parseDuration("2 minutes")).toThrow();
    // Parsed once, remembered: the same answer again, and a bad one still refused again.
    expect(parseDuration("2m")).toBe(120_000);
    expect(() => parseDuration("2 minutes")).toThrow();
    for (let i = 0; i < 300; i++) expect(parseDuration(`${i}s`)).toBe(i * 1_000);
    expect(parseDuration("299s")).toBe(299_000);
  });

  test("route rules: exact keys, prefix.*, and *", () => {
    expect(routeAllowed(["demo.*"], "demo.echo")).toBe(true);
    expect(routeAllowed(["demo.*"], "demo")).toBe(false);
    expect(routeAllowed(["demo.*"], "demonic.echo")).toBe(false);
    expect(routeAllowed(["billing.invoice"], "billing.invoice")).toBe(true);
    expect(routeAllowed(["billing.invoice"], "billing.invoice2")).toBe(false);
    expect(routeAllowed(["*"], "anything.at.all")).toBe(true);
    expect(routeAllowed([], "demo.echo")).toBe(false);
  });
});

describe("config loader on hostile YAML", () => {
  test("a value that contains itself through an alias is a ConfigError, not a crash", () => {
    const issues = issuesOf(`${minimal}\nlog: &a { level: info, again: *a }\n`);
    expect(issues.some((i) => i.includes("refers to itself"))).toBe(true);
  });
});

describe("rotation entries and the client directory", () => {
  const rotating = (tokens: string, secrets: string) => `
clients:
  - id: acme
    routes: ["*"]
    token_sha256: ${tokens}
    callback_secrets: ${secrets}
`;
  const SECRET_A = `whsec_${Buffer.alloc(32, 1).toString("base64")}`;
  const SECRET_B = `whsec_${Buffer.alloc(32, 2).toString("base64")}`;

  test("entries with retire_at drop out at that moment", () => {
    const config = parseConfig(
      rotating(
        `["${HASH}", { sha256: "${"b".repeat(64)}", retire_at: "2030-01-01T00:00:00Z" }]`,
        `["${SECRET_A}", { secret: "${SECRET_B}", retire_at: "2030-01-01T00:00:00+01:00" }]`,
      ),
      {},
    );
    const entry = config.clients[0] as (typeof config.clients)[0];
    const before = activeClient(entry, Date.parse("2029-12-31T22:59:59Z"));
    expect(before.token_sha256).toEqual([HASH, "b".repeat(64)]);
    expect(before.callback_secrets).toEqual([SECRET_A, SECRET_B]);
    const after = activeClient(entry, Date.parse("2029-12-31T23:00:00Z"));
    expect(after.callback_secrets).toEqual([SECRET_A]);
    expect(after.token_sha256).toEqual([HASH, "b".repeat(64)]);
    const directory = createClientDirectory(config.clients, () =>
      Date.parse("2031-01-01T00:00:00Z"),
    );
    expect(directory.client("acme")?.token_sha256).toEqual([HASH]);
    directory.replace([]);
    expect(directory.client("acme")).toBeUndefined();
  });

  test("the directory's view of a client follows the clock across a retirement, both ways", () => {
    const config = parseConfig(
      rotating(
        `["${HASH}"]`,
        `["${SECRET_A}", { secret: "${SECRET_B}", retire_at: "2030-01-01T00:00:00Z" }]`,
      ),
      {},
    );
    let now = Date.parse("2029-12-31T23:59:58Z");
    const directory = createClientDirectory(config.clients, () => now);
    const first = directory.client("acme");
    expect(first?.callback_secrets).toEqual([SECRET_A, SECRET_B]);
    now += 1_000;
    // Nothing retired in between: the same view, built once.
    expect(directory.client("acme")).toBe(first as NonNullable<typeof first>);
    now = Date.parse("2030-01-01T00:00:00Z");
    expect(directory.client("acme")?.callback_secrets).toEqual([SECRET_A]);
    now = Date.parse("2029-12-31T23:00:00Z");
    expect(directory.client("acme")?.callback_secrets).toEqual([SECRET_A, SECRET_B]);
    directory.replace([]);
    expect(directory.client("acme")).toBeUndefined();
  });

  test("a retire_at that is no date, and a token hash on two clients, are named", () => {
    expect(
      issuesOf(rotating(`[{ sha256: "${HASH}", retire_at: "2030-02-31T00:00:00Z" }]`, "[]")),
    ).toEqual(["clients[0].token_sha256[0].retire_at: is not a valid date"]);
    const twice = `${rotating(`["${HASH}"]`, "[]")}  - id: other\n    routes: ["*"]\n    token_sha256: ["${HASH}"]\n`;
    expect(issuesOf(twice)).toEqual([
      "clients[1].token_sha256: duplicate token hash: a token must identify one client (also clients[0])",
    ]);
  });

  test("file references read a secret file at load; a missing file names the key", () => {
    const files: Record<string, string> = { "/s/cb": `${SECRET_A}\n` };
    const readFile = (path: string) => {
      const text = files[path];
      if (text === undefined) throw Object.assign(new Error("nope"), { code: "ENOENT" });
      return text;
    };
    const config = parseConfig(rotating(`["${HASH}"]`, `["$\{file:/s/cb}"]`), {}, "t", {
      readFile,
    });
    expect(config.clients[0]?.callback_secrets).toEqual([SECRET_A]);
    expect(() =>
      parseConfig(rotating(`["${HASH}"]`, `["$\{file:/s/missing}"]`), {}, "t", { readFile }),
    ).toThrow("clients[0].callback_secrets[0]: cannot read file /s/missing (ENOENT)");
  });
});
