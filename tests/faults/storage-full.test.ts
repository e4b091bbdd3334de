import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { compareVersions } from "../../services/cli/status-command.ts";
import { SERVICE_NAMES } from "../../services/runtime/run.ts";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";
import { Load, verifyEchoOutcomes } from "./checks.ts";
import { faultYaml, hubProcs, startAllServices, subjectCounts } from "./procs.ts";

// The events stream limited to 64 KiB (discard new). Filling it gives 503 storage_full with a
// problem body, stores nothing for the refused runs, and accepted runs whose outcome could not be
// written yet are not lost: a restart with a larger events_max_bytes updates the stream
// (ensureTopology), and everything completes exactly once.

test("JetStream storage full: 503 storage_full, nothing half-written, recovery after the limit is raised", async () => {
  await using nats = await startNats();
  const small = faultYaml({ natsUrl: nats.url, nats: { events_max_bytes: 65_536 } });
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

  // Nothing half-written: exactly the 202s are stored, none of the refused requests.
  const jsm = await jetstreamManager(nats.nc);
  const info = await jsm.streams.info(TOPOLOGY.eventsStream);
  expect(info.config.max_bytes).toBe(65_536);
  expect(info.state.bytes).toBeLessThanOrEqual(65_536);
  const runs = await subjectCounts(jsm, "sy.evt.ops.*.run");
  const stored = new Set(Object.keys(runs).map((s) => s.split(".")[3]));
  const accepted = new Set(load.jobIds());
  // Nothing refused was stored.
  expect([...stored].filter((id) => !accepted.has(id as string))).toEqual([]);
  // Every 202 is stored, except on nats-server < 2.10.5: there a stream at max_bytes with discard
  // new can still evict its *oldest* messages (nats-server#4771, fixed by #4772), because the
  // server's pre-check underestimates a message's stored size. That loss is the server's, it is
  // reported here, and production requires >= 2.11 (docs/architecture.md). On fixed servers the
  // full assertion applies.
  const lost = [...accepted].filter((id) => !stored.has(id));
  const version = nats.nc.info?.version ?? "0.0.0";
  if (compareVersions(version, "2.10.5") >= 0 || lost.length === 0) {
    expect(lost).toEqual([]);
  } else {
    expect(info.state.first_seq).toBeGreaterThan(1);
    // Only the head of the stream went: every lost run is among the evicted first sequences.
    expect(lost.length).toBeLessThanOrEqual(info.state.first_seq - 1);
    process.stdout.write(
      `storage-full: nats-server ${version} evicted the ${lost.length} oldest accepted run(s) at max_bytes (nats-server#4771)\n`,
    );
    // The evicted runs cannot finish (their request is gone); the rest must, exactly once.
    for (const [requestId, jobId] of [...load.accepted])
      if (lost.includes(jobId)) load.accepted.delete(requestId);
  }
  expect(load.unsettled.size).toBeGreaterThan(0);
  expect(load.accepted.size).toBeGreaterThan(10);

  // Raise the limit: every service restarts with the new config; the first one updates the stream.
  await procs.writeConfig(faultYaml({ natsUrl: nats.url, nats: { events_max_bytes: 8_388_608 } }));
  for (const name of SERVICE_NAMES) await procs.kill(name);
  await startAllServices(procs);
  expect((await jsm.streams.info(TOPOLOGY.eventsStream)).config.max_bytes).toBe(8_388_608);
  // The refused requests go through now, with the same request_id.
  await load.settle();
  await verifyEchoOutcomes({ jsm, load, base: procs.url, timeoutMs: 45_000 });
}, 90_000);
