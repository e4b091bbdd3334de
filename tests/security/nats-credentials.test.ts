import { afterAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { credsAuthenticator, nkeyAuthenticator, nkeys } from "@nats-io/transport-node";
import { parseConfig } from "../../shared/config/index.ts";
import { connectHub, NatsAuthRefusedError, NatsFileError } from "../../shared/hub/index.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { credsFile, operatorMode } from "../helpers/nats-jwt.ts";

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function serverWith(authorization: string, connect: Record<string, unknown>) {
  const dir = await mkdtemp(join(tmpdir(), "switchyard-creds-"));
  dirs.push(dir);
  await writeFile(join(dir, "server.conf"), `authorization { ${authorization} }\n`);
  return { dir, nats: await startNats({ args: ["-c", join(dir, "server.conf")], connect }) };
}

/** Connects the way a service does, with `auth` as the config's nats.auth; the error if refused. */
async function attempt(nats: TestNats, auth: Record<string, string>, env = {}) {
  const { logger, logs } = captureLogger();
  const config = parseConfig(
    `nats: ${JSON.stringify({ url: nats.url, auth, connect_timeout: "60s" })}`,
    env,
  );
  const result = await connectHub(config, logger, "test").then(
    async (hub) => {
      await hub.drain();
      return undefined;
    },
    (err: Error) => err,
  );
  return { result, logs: logs() };
}

describe("every credential kind of nats.auth", () => {
  test("an NKey seed read from a file gets in; another user's seed is refused at once", async () => {
    const user = nkeys.createUser();
    const stranger = nkeys.createUser();
    const seed = new TextDecoder().decode(user.getSeed());
    // The helper connection signs with the same seed.
    const { dir, nats } = await serverWith(`users: [ { nkey: ${user.getPublicKey()} } ]`, {
      authenticator: nkeyAuthenticator(user.getSeed()),
    });
    await using _ = nats;
    await writeFile(join(dir, "seed"), `${seed}\n`);
    const ok = await attempt(nats, { nkey_seed: `\${file:${join(dir, "seed")}}` });
    expect(ok.result).toBeUndefined();
    const other = new TextDecoder().decode(stranger.getSeed());
    const refused = await attempt(nats, { nkey_seed: other });
    expect(refused.result).toBeInstanceOf(NatsAuthRefusedError);
    expect(refused.result?.message).toContain("nats.auth.nkey_seed");
    expect(`${refused.result?.message}${refused.logs}${ok.logs}`).not.toContain(seed);
    expect(`${refused.result?.message}${refused.logs}`).not.toContain(other);
  });

  test("a token from the environment gets in; a wrong one is refused at once", async () => {
    const token = "tok-4c1e9a7d0b2f4e3a";
    const { nats } = await serverWith(`token: "${token}"`, { token });
    await using _ = nats;
    const ok = await attempt(nats, { token: `$\{SY_NATS_TOKEN}` }, { SY_NATS_TOKEN: token });
    expect(ok.result).toBeUndefined();
    const refused = await attempt(nats, { token: "not-the-token" });
    expect(refused.result).toBeInstanceOf(NatsAuthRefusedError);
    expect(`${refused.result?.message}${refused.logs}${ok.logs}`).not.toContain(token);
  });

  test("a .creds file (operator mode) gets in and may set up the hub; another operator's is refused", async () => {
    const mode = operatorMode();
    const dir = await mkdtemp(join(tmpdir(), "switchyard-creds-"));
    dirs.push(dir);
    await writeFile(join(dir, "operator.jwt"), mode.operatorJwt);
    await writeFile(
      join(dir, "server.conf"),
      `${mode.config(join(dir, "operator.jwt"))}\njetstream { store_dir: "${join(dir, "store")}" }\n`,
    );
    const creds = join(dir, "user.creds");
    await writeFile(creds, credsFile(mode.account, "switchyard-admin"), { mode: 0o600 });
    await using nats = await startNats({
      args: ["-c", join(dir, "server.conf")],
      storeDir: join(dir, "store"),
      jetstreamInConfig: true,
      connect: { authenticator: credsAuthenticator(new Uint8Array(await Bun.file(creds).bytes())) },
    });
    const ok = await attempt(nats, { creds_file: creds });
    expect(ok.result).toBeUndefined();
    const stranger = join(dir, "stranger.creds");
    await writeFile(stranger, credsFile(operatorMode().account, "stranger"));
    const refused = await attempt(nats, { creds_file: stranger });
    expect(refused.result).toBeInstanceOf(NatsAuthRefusedError);
    expect(refused.result?.message).toContain("nats.auth.creds_file");
    const missing = await attempt(nats, { creds_file: join(dir, "none.creds") });
    expect(missing.result).toBeInstanceOf(NatsFileError);
    expect(missing.result?.message).toContain("nats.auth.creds_file");
  });
});
