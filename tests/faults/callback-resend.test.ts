import { expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import { startNats } from "../helpers/nats.ts";
import { waitFor } from "../helpers/wait.ts";
import { Load, startCallbackReceiver, verifyEchoOutcomes } from "./checks.ts";
import { FAULT_CLIENT, faultYaml, hubProcs, startAllServices } from "./procs.ts";

// nats-server SIGKILLed and restarted three times while callbacks flow (every job asks for one),
// the five services as separate processes. docs/callbacks.md, "Delivery guarantee": a callback is
// sent again only when its attempt could not be recorded (the callback process died, or NATS was
// gone, between the receiver's answer and the record); once `callback.delivered` is stored it is
// never sent again. 2.9 loses the last ~100 ms of a consumer's acks when killed, and hands those
// final events out again as first deliveries: the callback service must still see the record.
// Counted per webhook-id: no copy arrives after its delivery was recorded, and no callback
// arrives more than once per outage.

const KILLS = 3;

test("nats-server killed and restarted under callback load: no callback is sent again once its delivery is recorded", async () => {
  await using nats = await startNats();
  await using receiver = startCallbackReceiver();
  await using procs = await hubProcs(faultYaml({ natsUrl: nats.url }), nats.url);
  await startAllServices(procs);
  const load = new Load(procs.url, (request_id) => ({
    request_id,
    route: "f.echo",
    input: request_id,
    callback_url: `${receiver.url}/cb`,
  }));
  // Paced (8 workers, one request per 50 ms each): submitting faster than a busy machine delivers
  // callbacks only grows a backlog that the final check must then wait out.
  load.start(8, 50);
  try {
    for (let kill = 0; kill < KILLS; kill++) {
      const before = receiver.received.length;
      await waitFor("callbacks flowing", () => receiver.received.length >= before + 150, {
        timeoutMs: 30_000,
      });
      await nats.kill("SIGKILL");
      await Bun.sleep(300);
      await nats.restart();
    }
    const atLastRestart = load.accepted.size;
    await waitFor(
      "acceptance after the last restart",
      () => load.accepted.size >= atLastRestart + 50,
      {
        timeoutMs: 30_000,
      },
    );
  } finally {
    await load.stop();
  }
  expect(load.unexpected).toEqual([]);
  await load.settle();
  const jsm = await jetstreamManager(nats.nc);
  // Every job done, one callback.delivered each, every callback received (after the ack wait for
  // those whose final event was held when NATS died).
  await verifyEchoOutcomes({ jsm, load, base: procs.url, receiver, withCallback: () => true });

  const arrivals = new Map<string, number[]>();
  for (const r of receiver.received)
    arrivals.set(r.jobId, [...(arrivals.get(r.jobId) ?? []), r.at]);
  const afterRecord: string[] = [];
  const overBound: string[] = [];
  let resent = 0;
  for (const jobId of load.jobIds()) {
    const times = arrivals.get(jobId) ?? [];
    resent += Math.max(0, times.length - 1);
    if (times.length > 1 + KILLS) overBound.push(`${jobId}: ${times.length} copies`);
    const record = await jsm.streams.getMessage(TOPOLOGY.eventsStream, {
      last_by_subj: SINGLE_PARTITION_LAYOUT.subject(
        { client_id: FAULT_CLIENT.id, job_id: jobId },
        "cb",
      ),
    });
    const recordedAt = record?.time.getTime() ?? 0;
    const late = times.filter((at) => at > recordedAt);
    if (late.length > 0) {
      afterRecord.push(
        `${jobId}: ${late.length} of ${times.length} after the record (+${(late[0] ?? 0) - recordedAt} ms)`,
      );
    }
  }
  process.stdout.write(
    `callback-resend: ${load.jobIds().length} callbacks, ${resent} sent again over ${KILLS} nats-server kills\n`,
  );
  expect(afterRecord).toEqual([]);
  expect(overBound).toEqual([]);
}, 240_000);
