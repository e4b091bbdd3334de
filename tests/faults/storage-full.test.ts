import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { SERVICE_NAMES } from "../../services/runtime/run.ts";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { keepsByteLimitExactly } from "../../shared/nats/index.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";
import { Load, verifyEchoOutcomes } from "./checks.ts";
import { faultYaml, hubProcs, startAllServices, subjectCounts, submitRun } from "./procs.ts";

// The events stream limited to 64 KiB. New runs are refused (503 storage_full, with a problem
// body) once the stream holds the runs' share of the limit, so the events of accepted runs still
// fit: every 202 is stored and completes before the limit is raised, and nothing refused is
// stored. On nats-server < 2.10.5 (these machines' 2.9.10) the stream holds no byte limit of its
// own: there a stream at max_bytes with discard new drops its oldest messages (nats-server#4771),
// so the ingress's check is the limit. A restart with a larger events_max_bytes lets the refused
// requests through, each exactly once.

const LIMIT = 65_536;

test("JetStream storage full: 503 storage_full, every 202 stored and finished, recovery after the limit is raised", async () => {
  await using nats = await startNats();
  const small = faultYaml({ natsUrl: nats.url, nats: { events_max_bytes: LIMIT } });
  await using procs = await hubProcs(small, nats.url);
  await startAllServices(procs);
  const load = new Load(procs.url, (request_id) => ({
    request_id,
    route: "f.echo",
    input: `${request_id} ${"x".repeat(200)}`,
  }));
  load.start(4);
  try {
    await waitFor("storage_full refusals", () => load.refusals.length >= 5, { timeoutMs: 20_000 });
  } finally {
    await load.stop();
  }
  expect(load.unexpected).toEqual([]);
  const refusal = load.refusals.at(-1);
  expect(refusal?.status).toBe(503);
  expect(refusal?.headers.get("content-type")).toBe("application/problem+json");
  expect(Number(refusal?.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(refusal?.body).toMatchObject({ status: 503, code: "storage_full" });
  expect(load.unsettled.size).toBeGreaterThan(0);
  expect(load.accepted.size).toBeGreaterThan(10);

  const jsm = await jetstreamManager(nats.nc);
  const version = nats.nc.info?.version ?? "0.0.0";
  const info = await jsm.streams.info(TOPOLOGY.eventsStream);
  expect(info.config.max_bytes).toBe(keepsByteLimitExactly(version) ? LIMIT : -1);
  // No event was ever dropped: the stream still begins at its first sequence.
  expect(info.state.first_seq).toBe(1);
  const runs = await subjectCounts(jsm, "sy.evt.ops.*.run");
  const stored = new Set(Object.keys(runs).map((s) => s.split(".")[3]));
  const accepted = new Set(load.jobIds());
  // Every 202 is stored, and nothing refused is.
  expect([...accepted].filter((id) => !stored.has(id))).toEqual([]);
  expect([...stored].filter((id) => !accepted.has(id as string))).toEqual([]);
  // The accepted runs finish while new runs are refused: their events fit in the reserve, and
  // the stream stays within its limit.
  await verifyEchoOutcomes({ jsm, load, base: procs.url, timeoutMs: 30_000 });
  expect((await jsm.streams.info(TOPOLOGY.eventsStream)).state.bytes).toBeLessThanOrEqual(LIMIT);
  const stillRefused = await submitRun(procs.url(), {
    request_id: "after-full",
    route: "f.echo",
    input: "x",
  });
  expect(stillRefused.status).toBe(503);
  // A request accepted before is still answered as a replay.
  const [firstRequest, firstJob] = [...load.accepted][0] ?? ["", ""];
  const replay = await submitRun(procs.url(), {
    request_id: firstRequest,
    route: "f.echo",
    input: `${firstRequest} ${"x".repeat(200)}`,
  });
  expect(replay.status).toBe(200);
  expect(replay.jobId).toBe(firstJob);

  // Raise the limit: every service restarts with the new config; the first one updates the stream.
  await procs.writeConfig(faultYaml({ natsUrl: nats.url, nats: { events_max_bytes: 8_388_608 } }));
  for (const name of SERVICE_NAMES) await procs.kill(name);
  await startAllServices(procs);
  expect((await jsm.streams.info(TOPOLOGY.eventsStream)).config.max_bytes).toBe(
    keepsByteLimitExactly(version) ? 8_388_608 : -1,
  );
  // The refused requests go through now, with the same request_id.
  await load.settle();
  await verifyEchoOutcomes({ jsm, load, base: procs.url, timeoutMs: 45_000 });
}, 90_000);
