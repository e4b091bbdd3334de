import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runToEnd } from "../helpers/run.ts";

const MAIN = join(import.meta.dir, "../../services/cli/main.ts");
let dir = "";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "switchyard-cli-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function cli(args: readonly string[], extraEnv: Record<string, string> = {}) {
  const { stdout, stderr, code } = await runToEnd([process.execPath, MAIN, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: tmpdir(), ...extraEnv },
  });
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
  ["serve", "projector", "indexer", "--help"],
  ["token", "--help"],
  ["token", "new", "--help"],
  ["token", "new", "acme", "-h"],
  ["projector", "--help"],
  ["projector", "rebuild", "--help"],
  ["callbacks", "--help"],
  ["callbacks", "-h"],
  ["callbacks", "redeliver", "--help"],
  ["callbacks", "redeliver", "-h"],
  ["callbacks", "failed", "--help"],
  ["callbacks", "failed", "-h"],
  ["migrate", "--help"],
  ["migrate", "-h"],
  ["index", "--help"],
  ["index", "rebuild", "--help"],
  ["index", "rebuild", "-h"],
  ["jobs", "--help"],
  ["jobs", "-h"],
  ["jobs", "list", "--help"],
  ["jobs", "show", "-h"],
  ["jobs", "cancel", "--help"],
  ["jobs", "retry", "-h"],
  ["events", "--help"],
  ["audit", "--help"],
  ["audit", "verify", "-h"],
  ["audit", "keygen", "--help"],
  ["status", "--help"],
  ["tools", "--help"],
  ["tools", "compile", "--help"],
  ["tools", "publish", "-h"],
];

/** Bad usage, and what the message must name: the mistake, not something else on the way. */
const BAD: [string[], string][] = [
  [["up", "--port", "1"], "Unknown option '--port'"],
  [["serve", "ingress", "--bogus"], "Unknown option '--bogus'"],
  [["serve"], "missing argument"],
  [["serve", "projector", "nope"], "unknown service 'nope'; serve takes: ingress, projector"],
  [["serve", "indexer", "indexer"], "service 'indexer' is named twice"],
  [["token", "new", "acme", "--x"], "Unknown option '--x'"],
  [["token", "new"], "missing argument"],
  [["token", "old", "x"], "unknown token subcommand 'old'"],
  [["status", "--verbose"], "Unknown option '--verbose'"],
  [["events", "--nope"], "Unknown option '--nope'"],
  [["events", "--limit", "ten"], "--limit takes a whole number from 1, got 'ten'"],
  [["events", "--from-seq", "0"], "--from-seq takes a whole number from 1, got '0'"],
  [["audit", "verify", "--wat"], "Unknown option '--wat'"],
  [["audit", "keygen", "extra"], "unexpected argument 'extra'"],
  [["projector", "rebuild", "now"], "unexpected argument 'now'"],
  [["callbacks", "redeliver"], "missing argument"],
  [["callbacks"], "callbacks needs a subcommand"],
  [["callbacks", "nope"], "unknown callbacks subcommand 'nope'"],
  [["callbacks", "failed", "--bogus"], "Unknown option '--bogus'"],
  [["callbacks", "failed", "extra"], "Unexpected argument 'extra'"],
  [["callbacks", "redeliver", "--where", "a=b", "--bogus"], "Unknown option '--bogus'"],
  [["migrate", "--bogus"], "Unknown option '--bogus'"],
  [["migrate", "extra"], "unexpected argument 'extra'"],
  [["index"], "index needs a subcommand"],
  [["index", "nope"], "unknown index subcommand 'nope'"],
  [["index", "rebuild", "--x"], "Unknown option '--x'"],
  [["index", "rebuild", "now"], "unexpected argument 'now'"],
  [["jobs"], "jobs needs a command"],
  [["jobs", "nope"], "unknown jobs command 'nope'"],
  [["jobs", "list", "--bogus"], "Unknown option '--bogus'"],
  [["jobs", "list", "--url"], "--url needs the hub's base URL"],
  [["jobs", "show"], "jobs show needs one job id"],
  [["jobs", "cancel", "a", "b"], "jobs cancel needs one job id"],
  [["jobs", "retry", "--force", "a"], "Unknown option '--force'"],
  [["tools", "compile", "--wat"], "unknown option --wat"],
  [["nonsense"], "unknown command 'nonsense'"],
];

describe("every command: --help / -h print help and exit 0; unknown flags are errors", () => {
  test("help on every command and subcommand, with no side effect", async () => {
    const results = await Promise.all(HELP.map((args) => cli(args)));
    for (const r of results) {
      expect({ args: r.args, code: r.code, usage: r.stdout.includes("usage:") }).toEqual({
        args: r.args,
        code: 0,
        usage: true,
      });
      expect(r.stderr).toBe("");
    }
    const group = results.find((r) => r.args === "callbacks --help");
    expect(group?.stdout).toContain("<redeliver|failed>");
    expect(group?.stdout).toContain("failed [--where k=v]");
    // `token new --help` used to create a client named "--help".
    for (const r of results.filter((x) => x.args.startsWith("token new"))) {
      expect(r.stdout).not.toContain("token (shown once");
    }
    expect(await readdir(dir)).toEqual([]); // nothing started, nothing written
  });

  test("unknown flags, missing and extra arguments: exit 2 with the usage, never a stack trace", async () => {
    const results = await Promise.all(BAD.map(([args]) => cli(args)));
    for (const [i, r] of results.entries()) {
      const named = (BAD[i] as [string[], string])[1];
      expect({ args: r.args, code: r.code, named: r.stderr.includes(named) }).toEqual({
        args: r.args,
        code: 2,
        named: true,
      });
      expect(r.stderr).toContain("usage:");
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
    expect(await readdir(dir)).toEqual([]);
  });

  test("events --help says what each flag takes; status --help that it takes none", async () => {
    const { EVENTS_OPTIONS } = await import("../../services/cli/options.ts");
    const events = (await cli(["events", "--help"])).stdout;
    for (const [name, option] of Object.entries(EVENTS_OPTIONS)) {
      // A flag with a value names the value (`--since <time>`) and says what it is.
      const shape = option.type === "string" ? `--${name} <[^>]+>\\s+\\S` : `--${name}\\s+\\S`;
      expect({ name, described: new RegExp(`^  ${shape}`, "m").test(events) }).toEqual({
        name,
        described: true,
      });
    }
    expect(events).toContain("RFC 3339");
    const status = (await cli(["status", "--help"])).stdout;
    expect(status).toContain("takes no options");
  });

  test("operator commands check their arguments before the hub's URL and token", async () => {
    const noToken = { SWITCHYARD_ADMIN_URL: "http://127.0.0.1:9" };
    const bad = await cli(["jobs", "list", "--bogus"], noToken);
    expect({ code: bad.code, stderr: bad.stderr.split("\n")[0] }).toEqual({
      code: 2,
      stderr: "switchyard: Unknown option '--bogus'",
    });
    // Arguments in order, then the missing setting: nothing is sent to the hub without a token.
    const good = await cli(["jobs", "show", "job_1"], noToken);
    expect({ code: good.code, stderr: good.stderr.split("\n")[0] }).toEqual({
      code: 2,
      stderr: "switchyard: set SWITCHYARD_OPERATOR_TOKEN to an operator token",
    });
    // No URL, no `switchyard up` in this folder: it says where it looked.
    const noUrl = await cli(["callbacks", "failed"]);
    expect(noUrl.stderr).toContain(
      "no hub found: run this in the folder of a running `switchyard up`, or set SWITCHYARD_URL",
    );
  });
});
