/**
 * The single-host recipe (deploy/systemd, docs/deploy.md "One host with systemd"): the units pass
 * `systemd-analyze verify` with no warning, the hub's unit reaches the nats-server the other one
 * starts, is stopped before it (so it drains against a live server), and is given longer to stop
 * than its own graceful-stop deadline.
 */
import { expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const DIR = join(import.meta.dir, "../../deploy/systemd");
const UNITS = ["switchyard-nats.service", "switchyard.service"] as const;

/** Every `Key=value` of a unit file, by key (a repeated key keeps all its values). */
async function unit(name: string): Promise<Map<string, string[]>> {
  const keys = new Map<string, string[]>();
  for (const line of (await Bun.file(join(DIR, name)).text()).split("\n")) {
    const match = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (match)
      keys.set(match[1] as string, [...(keys.get(match[1] as string) ?? []), match[2] as string]);
  }
  return keys;
}

test("the units pass systemd-analyze verify without a warning", async () => {
  // verify wants ExecStart's binary to exist: the compiled switchyard stands in as Bun itself.
  const dir = await mkdtemp(join(tmpdir(), "switchyard-systemd-"));
  try {
    for (const name of UNITS) {
      const text = await Bun.file(join(DIR, name)).text();
      await Bun.write(
        join(dir, name),
        text.replaceAll("/usr/local/bin/switchyard", process.execPath),
      );
    }
    const proc = Bun.spawn(
      ["systemd-analyze", "verify", "--man=no", ...UNITS.map((u) => `./${u}`)],
      {
        cwd: dir,
        stdout: "pipe",
        stderr: "pipe",
      },
    );
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("the hub reaches the unit's nats-server, stops before it, and has time to drain", async () => {
  const nats = await unit("switchyard-nats.service");
  const hub = await unit("switchyard.service");
  const args = (nats.get("ExecStart")?.[0] ?? "").split(" ");
  const host = args[args.indexOf("-a") + 1];
  const port = args[args.indexOf("-p") + 1];
  expect(args).toContain("-js");
  expect(hub.get("Environment")).toContain(`NATS_URL=nats://${host}:${port}`);
  expect(hub.get("ExecStart")).toEqual(["/usr/local/bin/switchyard up"]);
  // Requires + After: started after, and stopped before, the nats-server.
  expect(hub.get("Requires")).toEqual(["switchyard-nats.service"]);
  expect(hub.get("After")?.[0]?.split(" ")).toContain("switchyard-nats.service");
  // services/cli/run-commands.ts gives a graceful stop 25 s before it exits 1.
  const source = await Bun.file(join(import.meta.dir, "../../services/cli/run-commands.ts")).text();
  const graceMs = Number(/SHUTDOWN_TIMEOUT_MS = ([\d_]+)/.exec(source)?.[1]?.replaceAll("_", ""));
  expect(graceMs).toBeGreaterThan(0);
  expect(Number(hub.get("TimeoutStopSec")?.[0]) * 1000).toBeGreaterThan(graceMs);
  expect(hub.get("KillMode")).toEqual(["mixed"]);
});
