/**
 * `switchyard permissions`: the file for --partitions P (or the config file's nats.partitions),
 * accepted by nats-server 2.9.10 itself (`-t`), and bad input refused naming the flag or the key.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  NATS_ROLES,
  natsPermissions,
  passwordVariable,
} from "../../services/cli/permissions/render.ts";
import { findNatsServerBinary } from "../../shared/nats/index.ts";
import { runToEnd } from "../helpers/run.ts";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "switchyard-permissions-"));
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function cli(args: string[], env: Record<string, string> = {}, cwd = dir) {
  return runToEnd([process.execPath, MAIN, "permissions", ...args], {
    cwd,
    env: { ...process.env, SWITCHYARD_CONFIG: "", ...env },
  });
}

/** `nats-server -t` of a server config that includes the file, with every role's password set. */
function natsCheck(permissionsFile: string) {
  const conf = join(dir, `server-${Math.random().toString(36).slice(2)}.conf`);
  copyFileSync(permissionsFile, join(dir, "permissions.conf"));
  writeFileSync(conf, "include ./permissions.conf\n");
  const passwords = Object.fromEntries(NATS_ROLES.map((r) => [passwordVariable(r), `pw-${r}`]));
  const run = Bun.spawnSync([findNatsServerBinary(process.env), "-t", "-c", conf], {
    env: { ...process.env, ...passwords },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: run.exitCode, out: `${run.stdout.toString()}${run.stderr.toString()}` };
}

describe("switchyard permissions", () => {
  test("--partitions 3 --out: the generated file, which nats-server accepts", async () => {
    const out = join(dir, "p3.conf");
    const run = await cli(["--partitions", "3", "--out", out]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain("3 partitions (--partitions)");
    expect(await Bun.file(out).text()).toBe(natsPermissions(3));
    const check = natsCheck(out);
    expect(check.out).toContain("is valid");
    expect(check.code).toBe(0);
  });

  test("--partitions 256: still a valid file, with a note that it outgrows a ConfigMap", async () => {
    const out = join(dir, "p256.conf");
    const run = await cli(["--partitions", "256", "--out", out]);
    expect(run.code).toBe(0);
    expect(run.stderr).toContain("more than a Kubernetes ConfigMap or Secret holds (1 MiB)");
    expect(natsCheck(out).code).toBe(0);
    const small = await cli(["--partitions", "16", "--out", join(dir, "p16.conf")]);
    expect(small.stderr).not.toContain("ConfigMap");
  });

  test("without --partitions: nats.partitions of the config file, read without its secrets", async () => {
    const config = join(dir, "switchyard.yaml");
    await Bun.write(
      config,
      // A secret this machine does not hold: the rest of the file is not read.
      `nats:\n  partitions: 4\nclients:\n  - { id: a, token_sha256: ["$${"{"}NOT_SET}"] }\n`,
    );
    const run = await cli([], { SWITCHYARD_CONFIG: config });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(natsPermissions(4));
    expect(run.stderr).toContain(`4 partitions (nats.partitions of ${config})`);
  });

  test("without --partitions or a config file: the default, 1, said on stderr", async () => {
    const empty = await mkdtemp(join(dir, "no-config-"));
    const run = await cli([], {}, empty);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(natsPermissions(1));
    expect(run.stderr).toContain("no --partitions and no config file");
  });

  test("a bad --partitions: exit 2 naming the flag and the range; nothing written", async () => {
    for (const bad of ["0", "257", "abc", "2.5", "-1"]) {
      const out = join(dir, `bad-${bad}.conf`);
      const run = await cli([`--partitions=${bad}`, "--out", out]);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(
        `--partitions must be a whole number from 1 to 256; got '${bad}'`,
      );
      expect(await Bun.file(out).exists()).toBe(false);
    }
  });

  test("a config file with a bad nats.partitions: exit 1 naming the key", async () => {
    const config = join(dir, "bad.yaml");
    await Bun.write(config, "nats:\n  partitions: 0\n");
    const run = await cli([], { SWITCHYARD_CONFIG: config });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("nats.partitions");
    expect(run.stdout).toBe("");
  });
});
