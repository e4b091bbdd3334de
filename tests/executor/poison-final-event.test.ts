/**
 * A NATS worker appends its final `.job` event straight to the events stream (docs/executors.md,
 * the worker protocol). Bytes that fail the hub's event schema are poison: every consumer
 * terminates them, so the job does not finish from that event. Its deadline timer ends it: the
 * expiry append conflicts (the poison moved the subject's last sequence), the writer reads the
 * status again past the poison and appends expecting the poison's sequence. Two kinds of poison: a
 * job.done whose data breaks its schema (the projector and the callback service terminate it), and
 * a type the hub does not know (the callback service skips it on its type header, unread). Poison
 * stored after the final event (a writer that expects no sequence) is read past too: GET's stream
 * fallback and an operator's retry see the expiry.
 */
import { expect, test } from "bun:test";
import { PubHeaders } from "@nats-io/jetstream";
import { headers as natsHeaders } from "@nats-io/transport-node";
import { retryJob } from "../../shared/actions/index.ts";
import {
  decodeEvent,
  EVENT_TYPE_HEADER,
  PoisonMessageError,
  readStream,
  TOPOLOGY,
} from "../../shared/bus/index.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { createJobIdDeriver, loadJobIdKey, randomIds } from "../../shared/ids/index.ts";
import { createJobReader, readStatus, writeStatus } from "../../shared/jobs/index.ts";
import { DEADLINE_STREAM } from "../../shared/schedule/index.ts";
import { decodeTask, TASK_STREAM, taskConsumerName } from "../../shared/worker/index.ts";
import { startHub } from "../helpers/hub.ts";
import { waitFor } from "../helpers/wait.ts";
import { waitFinal } from "./helpers.ts";

const CLIENT = { id: "acme", token: "poison-final-token-0123456789", routes: ["x.*"] };
const ROUTE = "x.poison";
const DEADLINE_MS = 2_000;

interface PoisonCase {
  readonly name: string;
  /** Sy-Event-Type, and the body's type. */
  readonly type: string;
  readonly data: (run: unknown) => Record<string, unknown>;
  /** How many consumers terminate it (one log line each). */
  readonly terminatedBy: number;
}

const CASES: readonly PoisonCase[] = [
  {
    // A final type whose data names its output wrongly.
    name: "job.done with a malformed data field",
    type: "job.done",
    data: (run) => ({ result: "hi", run }),
    terminatedBy: 2,
  },
  {
    name: "an unknown type",
    type: "job.finished",
    data: () => ({ output: "hi" }),
    terminatedBy: 1,
  },
];

/** Log lines with this message whose `seq` is the given stream sequence. */
function loggedFor(logs: string, msg: string, seq: number): number {
  return logs
    .split("\n")
    .filter((line) => line.includes(`"msg":"${msg}"`) && line.includes(`"seq":${seq},`)).length;
}

test.each(CASES)(
  "a NATS worker's final event is poison ($name): the deadline timer ends the job with deadline_exceeded",
  async (poisonCase) => {
    await using hub = await startHub({
      clients: [CLIENT],
      yaml: `
routes:
  - key: ${ROUTE}
    deadline: ${DEADLINE_MS / 1000}s
    executor: { kind: nats, ack_wait: 5s }
`,
    });
    const { js, jsm, layout } = hub.running.hub;
    // As in tests/integration/poison-events.test.ts: the read models share one feed before the job.
    await waitFor("the index on the shared feed", () =>
      hub.logs().includes("indexer folds the shared feed of its partition"),
    );
    const res = await hub.run(
      { request_id: "poison-final", route: ROUTE, input: "hi" },
      CLIENT.token,
    );
    expect(res.status).toBe(202);
    const { job_id } = (await res.json()) as { job_id: string };
    const ref = { client_id: CLIENT.id, job_id };
    const subject = layout.subject(ref, "job");

    // The worker, step by step as docs/executors.md gives the protocol: pull the task, append
    // job.running expecting the task's expected_seq, then the final event expecting that append.
    const consumer = await js.consumers.get(TASK_STREAM, taskConsumerName(ROUTE));
    const msg = await consumer.next({ expires: 5_000 });
    if (msg === null) throw new Error("no task was delivered");
    const task = decodeTask(msg.data);
    expect(task).toMatchObject({ job_id, client_id: CLIENT.id, route: ROUTE });
    expect(task?.expected_seq).toBeGreaterThan(0);
    const running = await writeStatus(
      { js, jsm, layout, clock: systemClock, ids: randomIds },
      {
        ref,
        intent: { type: "job.running", data: {} },
        known: { status: "dispatched", last: null, seq: task?.expected_seq ?? 0 },
      },
    );
    if (running.kind !== "appended") throw new Error(`job.running not appended: ${running.kind}`);

    // JSON in the shape of an event that is not a valid one.
    const poison = new TextEncoder().encode(
      JSON.stringify({
        id: "evt_poisonFinal0000000000",
        type: poisonCase.type,
        schema_version: 1,
        job_id,
        client_id: CLIENT.id,
        occurred_at: new Date().toISOString(),
        data: poisonCase.data(task?.run),
      }),
    );
    expect(() => decodeEvent(poison)).toThrow(PoisonMessageError);
    const headers = natsHeaders();
    headers.set(EVENT_TYPE_HEADER, poisonCase.type);
    headers.set(PubHeaders.ExpectedLastSubjectSequenceHdr, `${running.seq}`);
    const stored = await js.publish(subject, poison, { headers });
    expect(stored.seq).toBeGreaterThan(running.seq);
    msg.ack();

    // Before the deadline: the status is read past the poison (still running), and the next append
    // must expect the poison's sequence, the subject's real last one.
    const current = await readStatus({ jsm, layout }, ref);
    expect({ status: current.status, seq: current.seq, last: current.last?.seq }).toEqual({
      status: "running",
      seq: stored.seq,
      last: running.seq,
    });
    // GET's stream fallback (a view not written yet, or behind this process's append) reads it too.
    const reader = createJobReader({ viewsOf: (r) => hub.running.hub.viewsOf(r), jsm, layout });
    reader.appended(ref, Number.MAX_SAFE_INTEGER);
    expect(await reader.get(ref)).toMatchObject({ status: "running", seq: running.seq });

    // The job ends by its deadline, not by the poison.
    const view = await waitFinal(
      (path) => hub.request(path, { token: CLIENT.token }),
      job_id,
      DEADLINE_MS + 15_000,
    );
    expect(view).toMatchObject({ status: "error", error: { code: "deadline_exceeded" } });

    // In the stream: the poison stays where it was stored, and the expiry comes right after it.
    const records: { seq: number; type: string }[] = [];
    for await (const record of readStream(js, {
      stream: layout.streamOf(ref),
      filterSubject: subject,
    })) {
      records.push({ seq: record.seq, type: record.headers[EVENT_TYPE_HEADER] ?? "" });
    }
    expect(records.map((r) => r.type)).toEqual([
      "job.dispatched",
      "job.running",
      poisonCase.type,
      "job.error",
    ]);
    expect(records[2]?.seq).toBe(stored.seq);
    const expiry = await jsm.streams.getMessage(layout.streamOf(ref), { last_by_subj: subject });
    expect(expiry?.seq).toBeGreaterThan(stored.seq);
    expect(decodeEvent(expiry?.data ?? new Uint8Array())).toMatchObject({
      type: "job.error",
      data: { code: "deadline_exceeded", run: task?.run },
    });

    // The timer fired once, without a failed round, and is acked.
    const logs = hub.logs();
    expect(logs).not.toContain('"msg":"deadline timer failed"');
    const expired = logs
      .split("\n")
      .filter((line) => line.includes('"msg":"deadline exceeded"') && line.includes(job_id));
    expect(expired).toHaveLength(1);
    await waitFor("the deadline timer acked", async () => {
      for await (const info of jsm.consumers.list(DEADLINE_STREAM)) {
        if (info.num_pending > 0 || info.num_ack_pending > 0) return false;
      }
      return true;
    });

    // The poison was terminated once by each consumer that reads it, and no consumer of `.job`
    // events got it (or anything) again.
    await waitFor(
      "the poison terminated",
      () => loggedFor(hub.logs(), "poison event terminated", stored.seq) >= poisonCase.terminatedBy,
    );
    for (const durable of [TOPOLOGY.consumers.projector, TOPOLOGY.consumers.callback]) {
      const info = await waitFor(`${durable} settled`, async () => {
        const got = await jsm.consumers.info(layout.streamOf(ref), durable);
        return got.num_pending === 0 && got.num_ack_pending === 0 && got;
      });
      expect({ durable, redelivered: info.num_redelivered }).toEqual({ durable, redelivered: 0 });
    }
    expect(loggedFor(hub.logs(), "poison event terminated", stored.seq)).toBe(
      poisonCase.terminatedBy,
    );

    // A writer that appends poison after the final event (no expected sequence): reads of the
    // job's `.job` subject take the expiry still, and an operator's retry works (no 500).
    headers.delete(PubHeaders.ExpectedLastSubjectSequenceHdr);
    const late = await js.publish(subject, poison, { headers });
    expect(await reader.get(ref)).toMatchObject({ status: "error" });
    const retried = await retryJob(
      {
        js,
        jsm,
        layout,
        clock: systemClock,
        ids: randomIds,
        deriveJobId: createJobIdDeriver(await loadJobIdKey(hub.running.hub.meta)),
      },
      { clientId: CLIENT.id, jobId: job_id, by: { kind: "operator", id: "ops" } },
    );
    expect(retried).toMatchObject({ kind: "retried", created: true });
    expect((await readStatus({ jsm, layout }, ref)).seq).toBe(late.seq);
  },
);
