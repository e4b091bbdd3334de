/**
 * A command whose reader goes away ends quietly: `switchyard events | head -3` exits 0 with
 * nothing on stderr (services/cli/exit.ts, endWhenReaderGoes). Before, Bun reported the closed
 * pipe as an uncaught EPIPE error: a stack trace on stderr and exit 1. Real pipes to a real
 * `head`, which exits after its first bytes while the command still has output to write.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { DEFAULT_CLIENTS, startHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";

const ACME = DEFAULT_CLIENTS[0] as (typeof DEFAULT_CLIENTS)[0];
const REPO_ROOT = join(import.meta.dir, "../..");
const MAIN = join(REPO_ROOT, "services/cli/main.ts");

/** Runs `switchyard <args> | head -c 100` in bash; the command's exit code and stderr. */
async function throughHead(args: readonly string[], env: Record<string, string> = {}) {
  const script = `"$@" 2>&3 | head -c 100 > /dev/null; echo "\${PIPESTATUS[0]}"`;
  const proc = Bun.spawn(
    ["bash", "-c", `exec 3>&2; ${script}`, "bash", process.execPath, MAIN, ...args],
    { env: { ...process.env, ...env }, stdout: "pipe", stderr: "pipe" },
  );
  const [stdout, stderr] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code: Number(stdout.trim()), stderr };
}

test("events and tools compile piped into a reader that stops early: exit 0, nothing on stderr", async () => {
  await using hub = await startHub({ services: ["ingress", "projector", "executor"] });
  // About 400 kB of events: far more than a pipe holds, so writes go on after head has left.
  const input = "x".repeat(4_000);
  const ids: string[] = [];
  for (let i = 0; i < 50; i++) {
    const res = await hub.run({ request_id: `pipe-${i}`, route: "demo.echo", input }, ACME.token);
    ids.push(((await res.json()) as { job_id: string }).job_id);
  }
  await waitFor("every job done", async () => {
    const last = await hub.request(`/jobs/${ids.at(-1)}`, { token: ACME.token });
    return ((await last.json()) as { status: string }).status === "done";
  });
  const env = { NATS_URL: hub.nats.url, SWITCHYARD_CONFIG: "" };
  const results = await Promise.all([
    throughHead(["events"], env),
    throughHead(["events", "--pretty"], env),
    throughHead(["events", "--follow"], env),
    // No hub needed: the tool definitions of GitHub's API, several MB, to stdout.
    throughHead([
      "tools",
      "compile",
      join(REPO_ROOT, "node_modules/@octokit/openapi/generated/api.github.com.json"),
    ]),
  ]);
  const [events, pretty, follow, compile] = results;
  for (const result of [events, pretty, follow]) expect(result).toEqual({ code: 0, stderr: "" });
  // A compile writes its diagnostics to stderr, which still has a reader; whether it gets to them
  // before the closed stdout ends it is a race. Never the broken pipe, never a stack trace.
  expect(compile?.code).toBe(0);
  expect(compile?.stderr).not.toContain("EPIPE");
  expect(compile?.stderr).not.toMatch(/\n\s+at /);
}, 120_000);
