import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { type ServiceName, startServices } from "../../services/runtime/run.ts";
import { setupTopology } from "../../services/runtime/setup.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { type Config, parseConfig } from "../../shared/config/index.ts";
import { HubNotFoundError, TopologyNotSetUpError } from "../../shared/hub/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { testIndexYaml } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { LOOPBACK_PORTS, type Role, type RoleNats, startRoleNats } from "./nats-roles.ts";

let roles: RoleNats;
const indexYaml = testIndexYaml();

function configFor(role: Role, routes: string): Config {
  return parseConfig(
    `${LOOPBACK_PORTS}
nats: ${JSON.stringify(roles.natsSection(role))}
routes:
${routes}
${indexYaml}`,
    {},
    `${role} config`,
  );
}

const ECHO = "  - key: demo.echo\n    executor: { kind: builtin, name: echo }";
const WORKER = "  - key: demo.worker\n    executor: { kind: nats }";

async function start(service: ServiceName, routes: string): Promise<Error | undefined> {
  const { logger } = captureLogger();
  const deps = { config: configFor(service, routes), logger, clock: systemClock, ids: randomIds };
  return startServices([service], deps).then(
    async (hub) => {
      await hub.stop();
      return undefined;
    },
    (err: Error) => err,
  );
}

beforeAll(async () => {
  roles = await startRoleNats();
});
afterAll(async () => {
  await roles?.stop();
});

describe("services that do not manage the topology", () => {
  test("before setup: refused at once, naming switchyard setup; nothing is created", async () => {
    const err = await start("ingress", ECHO);
    expect(err).toBeInstanceOf(HubNotFoundError);
    expect(err?.message).toContain("switchyard setup");
    const jsm = await jetstreamManager(roles.nats.nc);
    expect(await jsm.streams.names().next()).toEqual([]);
  });

  test("a route setup has not seen: the executor names the refused call and switchyard setup", async () => {
    const { logger } = captureLogger();
    const admin = configFor("admin", ECHO);
    await setupTopology({ config: admin, logger, clock: systemClock, ids: randomIds });
    expect(await start("executor", ECHO)).toBeUndefined();
    const err = await start("executor", `${ECHO}\n${WORKER}`);
    expect(err).toBeInstanceOf(TopologyNotSetUpError);
    expect(err?.message).toContain("$JS.API.");
    expect(err?.message).toContain("switchyard setup");
  });

  test("after setup with the new route, the executor starts", async () => {
    const { logger } = captureLogger();
    const admin = configFor("admin", `${ECHO}\n${WORKER}`);
    await setupTopology({ config: admin, logger, clock: systemClock, ids: randomIds });
    expect(await start("executor", `${ECHO}\n${WORKER}`)).toBeUndefined();
  });
});
