import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import { runToEnd } from "../helpers/run.ts";
import { type Role, type RoleNats, startRoleNats } from "./nats-roles.ts";

// The CLI with the config file's nats.auth and nats.tls: `setup` as the admin, then `events`,
// `audit verify` and `status` with an auditor's file that holds only `nats:` and a password file.

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
let roles: RoleNats;
let dir: string;

/** A config file of `nats:` only for a role, its password in a file of its own. */
async function natsOnlyConfig(role: Role, password = roles.passwords[role]): Promise<string> {
  const passwordFile = join(dir, `${role}-password`);
  await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  const section = roles.natsSection(role, {
    auth: { user: role, password: `\${file:${passwordFile}}` },
  });
  const path = join(dir, `${role}-${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(path, `nats: ${JSON.stringify(section)}\n`);
  return path;
}

async function cli(args: string[], config: string) {
  const { NATS_URL: _, ...env } = process.env;
  const { stdout, stderr, code } = await runToEnd([process.execPath, MAIN, ...args], {
    cwd: dir,
    env: { ...env, SWITCHYARD_CONFIG: config, SWITCHYARD_LOG_LEVEL: "info" },
  });
  return { stdout, stderr, code, all: stdout + stderr };
}

beforeAll(async () => {
  roles = await startRoleNats();
  dir = await mkdtemp(join(tmpdir(), "switchyard-nats-cli-"));
});
afterAll(async () => {
  await roles?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("CLI commands under their NATS users", () => {
  test("setup with the admin's credential creates the topology; it logs no password", async () => {
    const admin = join(dir, "admin.yaml");
    const passwordFile = join(dir, "admin-password");
    await writeFile(passwordFile, roles.passwords.admin);
    const section = roles.natsSection("admin", {
      auth: { user: "admin", password: `\${file:${passwordFile}}` },
    });
    await writeFile(
      admin,
      `nats: ${JSON.stringify(section)}\nindex: { sqlite_path: "${join(dir, "index.sqlite")}" }\n`,
    );
    const result = await cli(["setup"], admin);
    expect(result.code).toBe(0);
    expect(result.all).toContain("setup done");
    expect(result.all).not.toContain(roles.passwords.admin);
    const jsm = await jetstreamManager(roles.nats.nc);
    expect((await jsm.streams.info("SWITCHYARD_EVENTS")).config.name).toBe("SWITCHYARD_EVENTS");
  });

  test("events, audit verify and status with an auditor's file of nats: alone", async () => {
    const auditor = await natsOnlyConfig("auditor");
    const events = await cli(["events", "--limit", "5"], auditor);
    expect(events.code).toBe(0);
    const verify = await cli(["audit", "verify"], auditor);
    expect(verify.stdout).toContain("0 divergences");
    expect(verify.code).toBe(0);
    const status = await cli(["status"], auditor);
    expect(status.stdout).toContain("SWITCHYARD_EVENTS");
    expect(status.code).toBe(0);
    for (const r of [events, verify, status]) expect(r.all).not.toContain(roles.passwords.auditor);
  });

  test("a wrong password: exit 1 at once with NATS's answer and the key, never the password", async () => {
    const wrong = await natsOnlyConfig("auditor", "not-the-auditor-password-93");
    const result = await cli(["events"], wrong);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("Authorization Violation");
    expect(result.stderr).toContain("nats.auth");
    expect(result.stderr).not.toContain("not-the-auditor-password-93");
    expect(result.stderr).not.toContain("    at ");
  });
});
