import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
let dir = "";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "switchyard-cli-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function cli(args: readonly string[]) {
  const proc = Bun.spawn([process.execPath, MAIN, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: tmpdir() },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { args: args.join(" "), code, stdout, stderr };
}

const HELP = [
  ["--help"],
  ["-h"],
  ["help"],
  ["up", "--help"],
  ["up", "-h"],
  ["serve", "--help"],
  ["serve", "ingress", "-h"],
  ["token", "--help"],
  ["token", "new", "--help"],
  ["token", "new", "acme", "-h"],
  ["projector", "--help"],
  ["projector", "rebuild", "--help"],
  ["callbacks", "redeliver", "--help"],
  ["events", "--help"],
  ["audit", "--help"],
  ["audit", "verify", "-h"],
  ["audit", "keygen", "--help"],
  ["status", "--help"],
  ["tools", "--help"],
  ["tools", "compile", "--help"],
  ["tools", "publish", "-h"],
];

const BAD = [
  ["up", "--port", "1"],
  ["serve", "ingress", "--bogus"],
  ["token", "new", "acme", "--x"],
  ["token", "new"],
  ["token", "old", "x"],
  ["status", "--verbose"],
  ["events", "--nope"],
  ["audit", "verify", "--wat"],
  ["audit", "keygen", "extra"],
  ["projector", "rebuild", "now"],
  ["callbacks", "redeliver"],
  ["tools", "compile", "--wat"],
  ["nonsense"],
];

describe("every command: --help / -h print help and exit 0; unknown flags are errors", () => {
  test("help on every command and subcommand, with no side effect", async () => {
    const results = await Promise.all(HELP.map(cli));
    for (const r of results) {
      expect({ args: r.args, code: r.code, usage: r.stdout.includes("usage:") }).toEqual({
        args: r.args,
        code: 0,
        usage: true,
      });
      expect(r.stderr).toBe("");
    }
    // `token new --help` used to create a client named "--help".
    for (const r of results.filter((x) => x.args.startsWith("token new"))) {
      expect(r.stdout).not.toContain("token (shown once");
    }
    expect(await readdir(dir)).toEqual([]); // nothing started, nothing written
  });

  test("unknown flags, missing and extra arguments: exit 2 with the usage, never a stack trace", async () => {
    const results = await Promise.all(BAD.map(cli));
    for (const r of results) {
      expect({ args: r.args, code: r.code }).toEqual({ args: r.args, code: 2 });
      expect(r.stderr).toContain("usage:");
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    expect(await readdir(dir)).toEqual([]);
  });
});
