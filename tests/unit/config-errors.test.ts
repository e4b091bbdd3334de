/**
 * Config errors name the wrong value or key and what is allowed there. Before, a misspelled
 * executor kind or builtin name read "expected union value" or a missing field of another kind
 * (`routes[0].executor: sleep_ms expected required property`), and a misspelled key read
 * "expected union value" beside "unexpected property".
 */
import { describe, expect, test } from "bun:test";
import { ConfigError, parseConfig } from "../../shared/config/index.ts";

function issuesOf(route: string): string[] {
  try {
    parseConfig(`routes:\n  - key: demo.echo\n${route}\n`, {}, "test.yaml");
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues.map((i) => `${i.key}: ${i.message}`);
  }
  throw new Error("expected a ConfigError");
}

describe("config errors say which value or key is wrong and what is allowed", () => {
  test("a misspelled builtin name", () => {
    expect(issuesOf("    executor: { kind: builtin, name: ecoh }")).toEqual([
      `routes[0].executor.name: "ecoh" is not allowed; one of: echo, sleep (did you mean 'echo'?)`,
    ]);
  });

  test("a misspelled executor kind, and a missing one", () => {
    expect(issuesOf("    executor: { kind: htp, url: http://x }")).toEqual([
      `routes[0].executor.kind: "htp" is not allowed; one of: builtin, http, nats (did you mean 'http'?)`,
    ]);
    expect(issuesOf("    executor: { name: echo }")).toEqual([
      "routes[0].executor.kind: is required; one of: builtin, http, nats",
    ]);
  });

  test("a misspelled key: the key, the one meant, the allowed ones; and the missing key as missing", () => {
    expect(issuesOf("    exector: { kind: builtin, name: echo }")).toEqual([
      "routes[0].executor: is required",
      "routes[0].exector: unknown key (did you mean 'executor'?); allowed here: key, enabled, max_input_bytes, deadline, concurrency, executor, tool_set",
    ]);
  });

  test("a misspelled key inside the executor of a kind: that kind's keys", () => {
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    expect(
      issuesOf(`    executor: { kind: http, url: "http://x", secret: ${secret}, timout: 5s }`),
    ).toEqual([
      "routes[0].executor.timout: unknown key (did you mean 'timeout'?); allowed here: kind, url, secret, token_sha256, timeout, max_response_bytes, cancel_url, max_attempts, retry_backoff",
    ]);
  });

  test("a value of the right kind out of range is named at its own key", () => {
    expect(issuesOf("    executor: { kind: builtin, name: sleep, sleep_ms: -1 }")).toEqual([
      "routes[0].executor.sleep_ms: expected integer to be greater or equal to 0",
    ]);
  });

  test("enumerations elsewhere: the value and the allowed ones", () => {
    expect(() => parseConfig("log: { level: verbose }", {}, "test.yaml")).toThrow(
      `log.level: "verbose" is not allowed; one of: trace, debug, info, warn, error, fatal, silent`,
    );
    expect(() => parseConfig("servr: { port: 1 }", {}, "test.yaml")).toThrow(
      "servr: unknown key (did you mean 'server'?)",
    );
  });
});

describe("a key under its former name", () => {
  test("admin is read as monitoring, with a notice naming the new key", () => {
    const notices: string[] = [];
    const config = parseConfig("admin: { host: 0.0.0.0, port: 9191 }", {}, "test.yaml", {
      notices: (found) => notices.push(...found.map((n) => `${n.key}: ${n.message}`)),
    });
    expect(config.monitoring).toEqual({ host: "0.0.0.0", port: 9191 });
    expect(notices).toEqual(["admin: is deprecated: rename it to monitoring (same settings)"]);
  });

  test("both names: which one was meant is not known, so start-up stops naming both", () => {
    expect(() =>
      parseConfig("admin: { port: 1 }\nmonitoring: { port: 2 }", {}, "test.yaml"),
    ).toThrow("admin: is the former name of monitoring; keep only monitoring");
  });

  test("the new name: no notice", () => {
    const notices: unknown[] = [];
    parseConfig("monitoring: { port: 9191 }", {}, "test.yaml", {
      notices: (found) => notices.push(...found),
    });
    expect(notices).toEqual([]);
  });
});
