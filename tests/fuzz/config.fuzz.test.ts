import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import fc from "fast-check";
import { stringify } from "yaml";
import { ConfigError, ConfigSchema, parseConfig } from "../../shared/config/index.ts";
import { FUZZ_SEED, fuzzRuns, fuzzTimeoutMs } from "./settings.ts";

/** `${NAME}`: an environment reference of the config loader (built so it is no template slip). */
const envRef = (name: string) => ["$", "{", name, "}"].join("");

/** A valid config as a plain object, the starting point of the mutations. */
const BASE = {
  server: { host: "127.0.0.1", port: 8080 },
  nats: { url: "nats://127.0.0.1:4222", replicas: 1 },
  clients: [
    {
      id: "acme",
      token_sha256: ["a".repeat(64)],
      routes: ["demo.*"],
      callback_secrets: [envRef("CB")],
      jwt: {
        issuer: "https://idp/",
        audience: "s",
        jwks_url: "https://idp/jwks",
        algorithms: ["RS256"],
      },
    },
  ],
  routes: [{ key: "demo.echo", executor: { kind: "builtin", name: "echo" } }],
  callbacks: { allow_cidrs: ["10.0.0.0/8"] },
};

/** Every path into BASE, so a mutation can hit any key at any depth. */
function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== "object") return [prefix];
  const entries = Array.isArray(value)
    ? value.map((v, i) => [i, v] as const)
    : Object.entries(value);
  return [prefix, ...entries.flatMap(([k, v]) => paths(v, [...prefix, k]))];
}
const PATHS = paths(BASE).filter((p) => p.length > 0);

function mutate(edits: readonly [number, unknown][]): unknown {
  const doc = structuredClone(BASE) as Record<string | number, unknown>;
  for (const [i, value] of edits) {
    const path = PATHS[i % PATHS.length] ?? [];
    let parent: unknown = doc;
    for (const k of path.slice(0, -1)) parent = (parent as Record<string | number, unknown>)?.[k];
    if (parent !== null && typeof parent === "object") {
      (parent as Record<string | number, unknown>)[path.at(-1) as string | number] = value;
    }
  }
  return doc;
}

const envValue = fc.oneof(fc.string(), fc.constantFrom(envRef("CB"), "whsec_AAAA", "", "\n- x"));
const env = fc.dictionary(fc.constantFrom("CB", "HOME", "X", "A_B"), envValue, { maxKeys: 4 });

const hostileYaml = fc.constantFrom(
  // Alias expansion ("billion laughs"), a value that contains itself, deep nesting, tags and
  // merge keys.
  "a: &a\n  b: *a",
  `a: &a ["x","x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]`,
  `${"[".repeat(5000)}${"]".repeat(5000)}`,
  `server: ${"{a: ".repeat(2000)}1${"}".repeat(2000)}`,
  "server: !!set {a, b}",
  "<<: {server: {port: 1}}",
  "server:\n  port: 99999999999999999999999",
  "clients: [{id: a, routes: ['*'], token_sha256: [], jwt: {issuer: i, audience: a, algorithms: [none]}}]",
  "\u0000\uFFFE",
  "--- !!binary AAAA",
  "server: ${",
  `server: {host: ${envRef("UNSET")}}`,
);

const text = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .array(fc.tuple(fc.nat(), fc.jsonValue()), { maxLength: 4 })
      .map((e) => stringify(mutate(e))),
  },
  fc.jsonValue().map((v) => stringify(v)),
  fc.string({ unit: "grapheme", maxLength: 200 }),
  hostileYaml,
);

describe(`config loader on arbitrary input (${fuzzRuns(300)} runs, seed ${FUZZ_SEED})`, () => {
  test(
    "returns a schema-valid config or throws ConfigError, never anything else, quickly",
    () => {
      let accepted = 0;
      fc.assert(
        fc.property(text, env, (yaml, vars) => {
          const started = performance.now();
          try {
            const config = parseConfig(yaml, vars, "fuzz");
            expect(Value.Check(ConfigSchema, config)).toBe(true);
            accepted++;
          } catch (err) {
            if (!(err instanceof ConfigError)) throw err;
            expect(err.issues.length).toBeGreaterThan(0);
            for (const issue of err.issues) expect(typeof issue.key).toBe("string");
          }
          expect(performance.now() - started).toBeLessThan(2_000);
        }),
        { seed: FUZZ_SEED, numRuns: fuzzRuns(300) },
      );
      // The mutations keep some configs valid, so the "returns" branch is exercised too.
      expect(accepted).toBeGreaterThan(0);
    },
    fuzzTimeoutMs(300),
  );

  test("a ConfigError names keys, never the values of secrets it rejected", () => {
    const secret = "whsec_not*a*valid*secret*but*private";
    const yaml = stringify(
      mutate([[PATHS.findIndex((p) => p.at(-1) === 0 && p.includes("callback_secrets")), secret]]),
    );
    const err = (() => {
      try {
        parseConfig(yaml, {}, "fuzz");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(String((err as ConfigError).message)).not.toContain(secret);
  });
});
