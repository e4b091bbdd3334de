import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { SERVICE_NAMES } from "../../services/runtime/run.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";
import { Load, startCallbackReceiver, verifyEchoOutcomes } from "./checks.ts";
import { faultYaml, getJob, hubProcs, startAllServices, submitRun } from "./procs.ts";

// NATS SIGKILLed under load with the five services as separate processes, then started again on
// the same port and store. While it is away the ingress answers 503 + Retry-After + problem body
// (POST and GET), never 202. Afterwards every 202 ends exactly once, no job is duplicated, every
// callback is delivered once, and no service process was restarted by hand.

test("NATS killed and restarted mid-load: 503 while down, every 202 ends exactly once", async () => {
  await using nats = await startNats();
  await using receiver = startCallbackReceiver();
  await using procs = await hubProcs(faultYaml({ natsUrl: nats.url }), nats.url);
  await startAllServices(procs);
  const withCallback = (n: number) => n % 3 === 0;
  const load = new Load(procs.url, (request_id, n) => ({
    request_id,
    route: "f.echo",
    input: request_id,
    ...(withCallback(n) ? { callback_url: `${receiver.url}/cb` } : {}),
  }));
  load.start(8);
  try {
    await waitFor("load before the kill", () => load.accepted.size >= 200, { timeoutMs: 20_000 });
    await nats.kill("SIGKILL");
    const atKill = load.accepted.size;

    // While NATS is away: refusals, not acceptances, for new runs and for reads.
    await waitFor("503 refusals while NATS is down", () => load.refusals.length >= 10, {
      timeoutMs: 15_000,
    });
    const refusal = load.refusals.at(-1);
    expect(refusal?.headers.get("content-type")).toBe("application/problem+json");
    expect(Number(refusal?.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refusal?.body).toMatchObject({ status: 503, code: "unavailable" });
    const someJob = load.jobIds()[0] ?? "";
    const get = await getJob(procs.url(), someJob);
    expect(get.status).toBe(503);
    expect(Number(get.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(get.body).toMatchObject({ status: 503, code: "unavailable" });
    const direct = await submitRun(procs.url(), {
      request_id: "while-down",
      route: "f.echo",
      input: "x",
    });
    expect(direct.status).toBe(503);
    expect(load.accepted.has("while-down")).toBe(false);
    // Requests in flight at the moment of the kill may still have got their ack; beyond those,
    // nothing is accepted while the server is gone.
    expect(load.accepted.size - atKill).toBeLessThanOrEqual(8);

    await nats.restart();
    const atRestart = load.accepted.size;
    await waitFor("acceptance after NATS returns", () => load.accepted.size >= atRestart + 200, {
      timeoutMs: 30_000,
    });
  } finally {
    await load.stop();
  }
  expect(load.unexpected).toEqual([]);
  await load.settle();

  // A final event the callback service held when NATS died comes back after the consumer's ack
  // wait (30 s at least), hence the long bound.
  await verifyEchoOutcomes({
    jsm: await jetstreamManager(nats.nc),
    load,
    base: procs.url,
    receiver,
    withCallback,
  });
  expect(receiver.received.length).toBeGreaterThan(50);
  for (const name of SERVICE_NAMES) {
    expect(procs.running(name)).toBe(true);
    expect(procs.output(name)).toContain("nats reconnected");
  }
}, 120_000);
