import type { JetStreamManager } from "@nats-io/jetstream";
import { Webhook } from "standardwebhooks";
import { decodeEvent, TOPOLOGY } from "../../shared/bus/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";
import { waitFor } from "../helpers/wait.ts";
import {
  FAULT_CLIENT,
  getJob,
  pool,
  type SubmitResult,
  subjectCounts,
  submitRun,
} from "./procs.ts";

const CLIENT = FAULT_CLIENT.id;
const FINAL = new Set(["job.done", "job.error", "job.rejected"]);

/**
 * Submits new runs from `workers` loops until stopped, against whatever ingress URL `base()`
 * names at the time (it changes when the ingress restarts). Keeps what each request_id got:
 * 202/200 with a job id (accepted), 503 or no answer (unsettled: retried later with the same
 * request_id), anything else (unexpected).
 */
export class Load {
  readonly accepted = new Map<string, string>(); // request_id → job_id
  readonly unsettled = new Set<string>(); // 503 or no answer: retry with the same request_id
  readonly unexpected: string[] = [];
  /** Every 503 body seen, for shape checks. */
  readonly refusals: SubmitResult[] = [];
  readonly latencies: number[] = [];
  private n = 0;
  private running = false;
  private loops: Promise<void>[] = [];

  constructor(
    private readonly base: () => string,
    private readonly body: (requestId: string, n: number) => Record<string, unknown>,
    private readonly prefix = `r${Date.now().toString(36)}`,
  ) {}

  /** Submits one request_id (new, or a retry) and records the answer. */
  async submit(requestId: string, n = 0): Promise<SubmitResult> {
    const started = performance.now();
    const res = await submitRun(this.base(), this.body(requestId, n));
    if (res.status === 202 || res.status === 200) {
      this.latencies.push(performance.now() - started);
      const earlier = this.accepted.get(requestId);
      if (earlier && earlier !== res.jobId) this.unexpected.push(`${requestId}: two job ids`);
      if (!res.jobId) this.unexpected.push(`${requestId}: ${res.status} without job_id`);
      else this.accepted.set(requestId, res.jobId);
      this.unsettled.delete(requestId);
    } else if (res.status === 503 || res.status === 0) {
      if (res.status === 503 && this.refusals.length < 50) this.refusals.push(res);
      if (!this.accepted.has(requestId)) this.unsettled.add(requestId);
    } else {
      this.unexpected.push(`${requestId}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
    }
    return res;
  }

  /** `periodMs`: each worker sends at most one request per period (a paced load); 0: unpaced. */
  start(workers: number, periodMs = 0): void {
    this.running = true;
    this.loops = Array.from({ length: workers }, async () => {
      while (this.running) {
        const n = this.n++;
        const started = performance.now();
        const res = await this.submit(`${this.prefix}-${n}`, n);
        const wait = periodMs - (performance.now() - started);
        if (wait > 0) await Bun.sleep(wait);
        // Do not spin while nothing answers (a killed ingress, NATS away).
        if (res.status === 0 || res.status === 503) await Bun.sleep(20);
      }
    });
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
  }

  /** Retries every unsettled request_id with the same body until each got 202 or 200. */
  async settle(timeoutMs = 30_000): Promise<void> {
    await waitFor(
      "every refused or unanswered request to be accepted on retry",
      async () => {
        for (const requestId of [...this.unsettled]) {
          const n = Number(requestId.slice(requestId.lastIndexOf("-") + 1));
          await this.submit(requestId, Number.isFinite(n) ? n : 0);
        }
        return this.unsettled.size === 0;
      },
      { timeoutMs, intervalMs: 200 },
    );
  }

  jobIds(): string[] {
    return [...this.accepted.values()];
  }
}

/** Waits until every job has at least `minEvents` events on its `.job` subject. */
export async function waitJobEvents(
  jsm: JetStreamManager,
  jobIds: readonly string[],
  { minEvents = 1, timeoutMs = 60_000 }: { minEvents?: number; timeoutMs?: number } = {},
): Promise<Record<string, number>> {
  let missing = jobIds.length;
  return await waitFor(
    `${jobIds.length} jobs to reach a final status (last count missing: ${missing})`,
    async () => {
      const counts = await subjectCounts(jsm, `sy.evt.${CLIENT}.*.job`);
      missing = jobIds.filter(
        (id) => (counts[`sy.evt.${CLIENT}.${id}.job`] ?? 0) < minEvents,
      ).length;
      return missing === 0 ? counts : undefined;
    },
    { timeoutMs, intervalMs: 250 },
  );
}

/**
 * For jobs whose route writes exactly one status event (builtin echo: job.done): every accepted
 * job has one run.requested and one status event, and no other job exists. Returns problems.
 */
export async function exactlyOnceProblems(
  jsm: JetStreamManager,
  jobIds: readonly string[],
  statusEventsPerJob = 1,
): Promise<string[]> {
  const problems: string[] = [];
  const runs = await subjectCounts(jsm, `sy.evt.${CLIENT}.*.run`);
  const jobs = await subjectCounts(jsm, `sy.evt.${CLIENT}.*.job`);
  const wanted = new Set(jobIds);
  for (const id of wanted) {
    const r = runs[`sy.evt.${CLIENT}.${id}.run`] ?? 0;
    const j = jobs[`sy.evt.${CLIENT}.${id}.job`] ?? 0;
    if (r !== 1) problems.push(`${id}: ${r} run.requested`);
    if (j !== statusEventsPerJob) problems.push(`${id}: ${j} status events`);
  }
  for (const subject of Object.keys(runs)) {
    const id = subject.split(".")[3] ?? "";
    if (!wanted.has(id)) problems.push(`${id}: stored but never acknowledged to a caller`);
  }
  return problems;
}

/** Every event on one of a job's subjects, in stream order (direct get, stream leader). */
export async function subjectEvents(
  jsm: JetStreamManager,
  jobId: string,
  kind: "run" | "job" | "cb",
): Promise<JobEvent[]> {
  const events: JobEvent[] = [];
  let seq = 1;
  for (;;) {
    const msg = await jsm.direct.getMessage(TOPOLOGY.eventsStream, {
      seq,
      next_by_subj: `sy.evt.${CLIENT}.${jobId}.${kind}`,
    });
    if (msg === null) return events;
    events.push(decodeEvent(msg.data));
    seq = msg.seq + 1;
  }
}

/** The number of final status events of a job (exactly one is the guarantee). */
export async function finalEvents(jsm: JetStreamManager, jobId: string): Promise<JobEvent[]> {
  return (await subjectEvents(jsm, jobId, "job")).filter((e) => FINAL.has(e.type));
}

export interface ReceivedCallback {
  readonly webhookId: string;
  readonly jobId: string;
  readonly status: string;
  /** When it arrived (Date.now()). */
  readonly at: number;
}

export interface CallbackReceiver extends AsyncDisposable {
  readonly url: string;
  /** Verified callbacks, in arrival order (duplicates included). */
  readonly received: ReceivedCallback[];
  /** Requests that failed signature verification. */
  readonly invalid: number;
  /** Requests currently held open by the hanging path. */
  readonly hanging: number;
  /** webhook-id → how many times it arrived. */
  counts(): Map<string, number>;
  stop(): Promise<void>;
}

/**
 * A verifying Standard Webhooks receiver on 127.0.0.1. Paths starting with /hang never answer
 * (until stop); others answer 204 after `delayMs` (0 by default).
 */
export function startCallbackReceiver(delayMs = 0): CallbackReceiver {
  const webhook = new Webhook(FAULT_CLIENT.secret);
  const received: ReceivedCallback[] = [];
  let invalid = 0;
  let hanging = 0;
  const release: (() => void)[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const body = await req.text();
      if (path.startsWith("/hang")) {
        hanging++;
        await new Promise<void>((resolve) => release.push(resolve));
        hanging--;
        return new Response(null, { status: 503 });
      }
      const headers = Object.fromEntries(req.headers.entries());
      let event: { data: { job_id: string; status: string } };
      try {
        event = webhook.verify(body, headers) as typeof event;
      } catch {
        invalid++;
        return new Response(null, { status: 400 });
      }
      if (delayMs > 0) await Bun.sleep(delayMs);
      received.push({
        at: Date.now(),
        webhookId: headers["webhook-id"] ?? "",
        jobId: event.data.job_id,
        status: event.data.status,
      });
      return new Response(null, { status: 204 });
    },
  });
  const stop = async () => {
    for (const r of release.splice(0)) r();
    await server.stop(true);
  };
  return {
    url: `http://127.0.0.1:${server.port}`,
    received,
    get invalid() {
      return invalid;
    },
    get hanging() {
      return hanging;
    },
    counts() {
      const m = new Map<string, number>();
      for (const r of received) m.set(r.webhookId, (m.get(r.webhookId) ?? 0) + 1);
      return m;
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** p-th percentile (0..100) of a list of numbers; 0 for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** The `n` a Load request id ends with (`<prefix>-<n>`). */
export const requestNumber = (requestId: string) =>
  Number(requestId.slice(requestId.lastIndexOf("-") + 1));

/**
 * The guarantees every fault test checks once the faults are over, for echo jobs: each 202 ends
 * exactly once (one run.requested, one status event), no job exists that no caller was told
 * about, GET shows every job done (the projector caught up), and each job that asked for a
 * callback has exactly one callback.delivered and reached the receiver.
 */
export async function verifyEchoOutcomes(options: {
  readonly jsm: JetStreamManager;
  readonly load: Load;
  readonly base: () => string;
  readonly receiver?: CallbackReceiver;
  readonly withCallback?: (n: number) => boolean;
  readonly timeoutMs?: number;
}): Promise<void> {
  const { jsm, load, base, receiver } = options;
  const timeoutMs = options.timeoutMs ?? 60_000;
  const jobIds = load.jobIds();
  await waitJobEvents(jsm, jobIds, { timeoutMs });
  const problems = await exactlyOnceProblems(jsm, jobIds);
  if (problems.length > 0) throw new Error(`exactly-once violated:\n${problems.join("\n")}`);

  await waitFor(
    "every job to read as done through GET",
    async () => {
      let notDone = 0;
      await pool(jobIds, 16, async (id) => {
        const res = await getJob(base(), id);
        if (res.body.status !== "done") notDone++;
      });
      return notDone === 0;
    },
    { timeoutMs, intervalMs: 250 },
  );

  const wants = options.withCallback;
  if (!receiver || !wants) return;
  const cbJobs = [...load.accepted.entries()]
    .filter(([rid]) => wants(requestNumber(rid)))
    .map(([, id]) => id);
  await waitFor(
    `all ${cbJobs.length} callbacks to be received`,
    () => cbJobs.every((id) => receiver.received.some((r) => r.jobId === id)),
    { timeoutMs, intervalMs: 200 },
  );
  const cbProblems: string[] = [];
  await pool(cbJobs, 16, async (id) => {
    // A callback delivered just before NATS went away is recorded when its final event comes
    // back after the consumer's ack wait (the nak sent while NATS was down never arrived), so
    // its record may follow the receipt by that long: the same bound as the receipt's.
    const events = await waitFor(
      `job ${id}'s callback outcome`,
      async () => {
        const list = await subjectEvents(jsm, id, "cb");
        return list.at(-1)?.type === "callback.delivered" ? list : undefined;
      },
      { timeoutMs, intervalMs: 250 },
    );
    const delivered = events.filter((e) => e.type === "callback.delivered").length;
    if (delivered !== 1) cbProblems.push(`${id}: ${delivered} callback.delivered`);
  });
  if (cbProblems.length > 0) throw new Error(`callbacks:\n${cbProblems.join("\n")}`);
  if (receiver.invalid > 0) throw new Error(`${receiver.invalid} callbacks failed verification`);
  const ids = new Set(receiver.received.map((r) => r.jobId));
  const unasked = [...ids].filter((id) => !cbJobs.includes(id));
  if (unasked.length > 0) throw new Error(`callbacks for jobs that did not ask: ${unasked}`);
}

/** Counts requests per webhook-id (the job id for tasks, msg_<job> for callbacks). */
export function countingServer(answer: () => Response) {
  const seen = new Map<string, number>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      await req.arrayBuffer();
      const id = req.headers.get("webhook-id") ?? "";
      seen.set(id, (seen.get(id) ?? 0) + 1);
      return answer();
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, seen, stop: () => server.stop(true) };
}
