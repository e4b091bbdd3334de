import { describe, expect, test } from "bun:test";
import { ConfigError, parseConfig } from "../../shared/config/index.ts";
import { identityOptions, redactUrl } from "../../shared/nats/index.ts";
import { captureLogger } from "../helpers/logs.ts";

/** A quoted `${NAME}` reference as it appears in a config file. */
const ref = (name: string) => `"$\{${name}}"`;

function issues(yaml: string, env: Record<string, string> = {}): string[] {
  try {
    parseConfig(yaml, env, "test");
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.issues.map((i) => `${i.key}: ${i.message}`);
  }
}

describe("nats.auth and nats.tls", () => {
  test("one credential kind at a time, named by key", () => {
    expect(issues("nats: { auth: { token: a, user: b, password: c } }")).toContain(
      "nats.auth: set exactly one of user (with password), token, nkey_seed or creds_file; found user, token",
    );
    expect(issues("nats: { auth: {} }")[0]).toContain("found none");
  });

  test("user and password come together", () => {
    expect(issues("nats: { auth: { user: a } }")).toContain(
      "nats.auth.password: is required with nats.auth.user",
    );
    expect(issues("nats: { auth: { password: a } }")).toContain(
      "nats.auth.user: is required with nats.auth.password",
    );
  });

  test("a secret from a variable that is not set names the key and not a value", () => {
    expect(issues(`nats: { auth: { user: a, password: ${ref("SY_PW")} } }`)).toEqual([
      "nats.auth.password: environment variable SY_PW is not set",
    ]);
  });

  test("a lone client certificate is named; the files themselves are checked at connect", () => {
    const found = issues("nats: { tls: { ca_file: /nope/ca.pem, cert_file: /nope/c.pem } }");
    expect(found).toEqual([
      "nats.tls.key_file: is required: a client certificate needs both cert_file and key_file",
    ]);
  });

  test("an nkey seed that is not a user seed is refused without echoing it", () => {
    const found = issues("nats: { auth: { nkey_seed: SAnotauserseed } }");
    expect(found).toEqual(["nats.auth.nkey_seed: is not an NKey user seed (SU…)"]);
  });

  test("maps to nats.js options: user/pass, token, tls files, server name, inbox prefix", () => {
    const config = parseConfig(
      `nats: { auth: { user: ingress, password: ${ref("PW")} }, inbox_prefix: _INBOX_ingress }`,
      { PW: "s3cret" },
    );
    expect(identityOptions(config.nats)).toEqual({
      user: "ingress",
      pass: "s3cret",
      inboxPrefix: "_INBOX_ingress",
    });
    const withTls = identityOptions({ auth: { token: "t" }, tls: { server_name: "nats.test" } });
    expect(withTls.token).toBe("t");
    expect(JSON.stringify(withTls.tls)).toBe('{"servername":"nats.test"}');
  });

  test("manage_topology defaults to true; URLs with credentials are redacted", () => {
    expect(parseConfig("{}", {}).nats.manage_topology).toBe(true);
    expect(redactUrl("nats://u:p@a:4222,tls://tok@b:4222")).toBe(
      "nats://***@a:4222,tls://***@b:4222",
    );
  });

  test("a logged nats.auth shows the user, never the password or seed", () => {
    const { logger, logs } = captureLogger();
    logger.info({ auth: { user: "ingress", password: "pw-7d1f", nkey_seed: "SUAB" } });
    logger.info({ password: "pw-7d1f" });
    expect(logs()).toContain("ingress");
    expect(logs()).not.toContain("pw-7d1f");
    expect(logs()).not.toContain("SUAB");
  });
});
