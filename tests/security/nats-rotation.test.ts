import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setupTopology } from "../../services/runtime/setup.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { parseConfig } from "../../shared/config/index.ts";
import { connectHub, type HubConnection, NatsAuthRefusedError } from "../../shared/hub/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { testIndexYaml } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { waitFor } from "../helpers/wait.ts";
import { type RoleNats, startRoleNats } from "./nats-roles.ts";

// The rotation procedures of docs/deploy.md ("Rotating NATS credentials and certificates"), run
// against nats-server 2.9.10 with deploy/nats/permissions.conf and mTLS.

const NEXT_PASSWORD = "pw-ingress-next-5b0c2e9a41d7";
const indexYaml = testIndexYaml();
let roles: RoleNats;
const open: HubConnection[] = [];

function natsYaml(nats: Record<string, unknown>): string {
  return `nats: ${JSON.stringify(nats)}\n${indexYaml}`;
}

async function connectWith(nats: Record<string, unknown>): Promise<HubConnection> {
  const { logger } = captureLogger();
  const hub = await connectHub(parseConfig(natsYaml(nats), {}), logger, "rotation");
  open.push(hub);
  return hub;
}

let reloads = 0;
/** Rewrites permissions.conf and reloads the server, as `nats-server --signal reload` does. */
async function editAndReload(edit: (text: string) => string): Promise<void> {
  const path = join(roles.dir, "permissions.conf");
  await writeFile(path, edit(await readFile(path, "utf8")));
  reloads++;
  process.kill(roles.nats.server().pid, "SIGHUP");
  await waitFor("the server to reload", () => {
    const seen = roles.nats.server().output().split("Reloaded server configuration").length - 1;
    return seen >= reloads;
  });
}

const appendRun = (hub: HubConnection, job: string) =>
  hub.js.publish(`sy.evt.acme.${job}.run`, "{}");

beforeAll(async () => {
  roles = await startRoleNats({ env: { SY_INGRESS_NEXT_PASSWORD: NEXT_PASSWORD } });
  const { logger } = captureLogger();
  const config = parseConfig(natsYaml(roles.natsSection("admin")), {});
  await setupTopology({ config, logger, clock: systemClock, ids: randomIds });
});
afterAll(async () => {
  for (const hub of open) await hub.drain().catch(() => {});
  await roles?.stop();
});

describe("rotation without downtime", () => {
  test("a role's password: a second user with the same permissions, then the old one goes", async () => {
    const old = await connectWith(roles.natsSection("ingress"));
    await editAndReload((text) =>
      text.replace(
        "    { user: ingress,",
        "    { user: ingress_next, password: $SY_INGRESS_NEXT_PASSWORD, permissions: $INGRESS_PERMISSIONS }\n    { user: ingress,",
      ),
    );
    // Both users work; the running connection was not dropped.
    expect((await appendRun(old, "R1")).stream).toBe("SWITCHYARD_EVENTS");
    const next = await connectWith({
      ...roles.natsSection("ingress"),
      auth: { user: "ingress_next", password: NEXT_PASSWORD },
    });
    expect((await appendRun(next, "R2")).stream).toBe("SWITCHYARD_EVENTS");
    // The same permissions: still no job views.
    expect(String(await next.jobs.put("acme.R2", "{}").catch((e: Error) => e))).toContain(
      "Permissions Violation",
    );
    await editAndReload((text) => text.replace(/^ {4}\{ user: ingress, .*\n/m, ""));
    expect((await appendRun(next, "R3")).stream).toBe("SWITCHYARD_EVENTS");
    const refused = await connectWith(roles.natsSection("ingress")).catch((e: Error) => e);
    expect(refused).toBeInstanceOf(NatsAuthRefusedError);
    await waitFor("the old user's connection to be closed", () => !old.connected());
    // It would keep reconnecting with the removed user, each attempt an [ERR] in the server's log
    // during the next test: closed for good, as its process would be restarted with the new one.
    await old.nc.close();
  });

  test("the server's certificate: renewed from the same CA and reloaded, connections stay", async () => {
    const before = await connectWith(roles.natsSection("auditor"));
    const logged = roles.nats.server().output().length;
    await roles.pki.reissueServer();
    await editAndReload((text) => text);
    const sinceReload = roles.nats.server().output().slice(logged);
    expect(sinceReload).toContain("Reloaded: tls");
    expect(sinceReload).not.toContain("[ERR]");
    expect((await before.jsm.streams.info("SWITCHYARD_EVENTS")).config.name).toBe(
      "SWITCHYARD_EVENTS",
    );
    const after = await connectWith(roles.natsSection("auditor"));
    expect(after.connected()).toBe(true);
  });
});
