import { afterAll, describe, expect, test } from "bun:test";
import { registerExecutorKind } from "../../services/executor/index.ts";
import { ConfigError, parseConfig } from "../../shared/config/index.ts";
import { shoutKind } from "../fixtures/executor-kinds/shout/index.ts";
import { hubYaml, startHub, type TestHub } from "../helpers/hub.ts";
import { eventTypes, waitFinal } from "./helpers.ts";

const CLIENT = { id: "ops", token: "ops-token-0123456789abcdef", routes: ["x.*"] };

const shoutRoutes = (prefix: string) => `
routes:
  - key: x.shout
    executor: { kind: shout, prefix: "${prefix}" }
`;

const issuesOf = (yaml: string): string[] => {
  try {
    parseConfig(hubYaml("nats://127.0.0.1:1", [CLIENT], yaml), {}, "test.yaml");
  } catch (err) {
    if (err instanceof ConfigError) return err.issues.map((i) => `${i.key}: ${i.message}`);
    throw err;
  }
  return [];
};

let hub: TestHub | undefined;
let unregister = () => {};
afterAll(async () => {
  await hub?.stop();
  // The registry is the process's: tests after this file see only the shipped kinds.
  unregister();
});

// In this order: the kind is unknown until its folder is registered.
describe("an executor kind registered from one folder (tests/fixtures/executor-kinds/shout)", () => {
  test("before it is registered, a route of that kind is refused by the config schema", () => {
    expect(issuesOf(shoutRoutes(">> "))[0]).toStartWith("routes[0].executor");
  });

  test("registered, its config is accepted and its own check names its key", () => {
    unregister = registerExecutorKind(shoutKind);
    // The same module again changes nothing.
    registerExecutorKind(shoutKind);
    expect(issuesOf(shoutRoutes(">> "))).toEqual([]);
    expect(issuesOf(shoutRoutes("why?"))).toEqual([
      "routes[0].executor.prefix: must not ask: no '?'",
    ]);
  });

  test("a job of the kind runs through the executor on a real nats-server", async () => {
    hub = await startHub({ clients: [CLIENT], yaml: shoutRoutes(">> ") });
    const res = await hub.run(
      { request_id: "shout-1", route: "x.shout", input: "hello" },
      CLIENT.token,
    );
    expect(res.status).toBe(202);
    const { job_id: jobId } = (await res.json()) as { job_id: string };
    const job = await waitFinal(
      (path) => hub?.request(path, { token: CLIENT.token }) ?? fetch(path),
      jobId,
    );
    expect(job.status).toBe("done");
    expect(job.output).toBe(">> HELLO");
    expect(await eventTypes(hub.nats.nc, CLIENT.id, jobId)).toEqual(["job.done"]);
  });

  test("taken out again, the kind is unknown once more (the registry is the process's)", () => {
    unregister();
    expect(issuesOf(shoutRoutes(">> "))[0]).toStartWith("routes[0].executor");
  });
});
