/**
 * End-to-end driver, run as its own process: submits jobs (closed loop at a fixed concurrency, or
 * open loop at a fixed rate) with a callback_url, polls a sample of them with GET until they are
 * final, and reads the callback receiver's arrival times. Works against the hub and the peer
 * (both answer POST /run and GET /jobs/{id} with {job_id, status}). Prints `RESULT <json>`.
 *
 * Usage: bun bench/e2e.ts '<E2eSpec as JSON>'
 */
import { type LatencySummary, nowMs, round, summarize, writeResultLine } from "./lib/common.ts";

export interface E2eSpec {
  readonly base: string;
  readonly token: string;
  readonly route: string;
  readonly prefix: string;
  /** Closed loop: this many jobs at `concurrency`. */
  readonly jobs?: number;
  readonly concurrency?: number;
  /** Open loop: `rate` jobs per second for `durationSec`. */
  readonly rate?: number;
  readonly durationSec?: number;
  readonly callbackUrl?: string;
  readonly receiverUrl?: string;
  /** Every n-th job is polled with GET until final. */
  readonly sampleEvery: number;
  readonly pollMs: number;
  /** Give up waiting for completions after this long. */
  readonly timeoutSec: number;
  /** Every n-th accepted job's submit and accept times go to `stamps` (bench/latency-stages.ts). */
  readonly stampEvery?: number;
}

export interface E2eResult {
  readonly submitted: number;
  readonly accepted: number;
  readonly submitErrors: number;
  readonly submitStatus: Record<string, number>;
  readonly submitLatencyMs: LatencySummary;
  readonly submitPerSec: number;
  readonly completed: number;
  readonly completedPerSec: number;
  readonly wallSec: number;
  readonly toDoneMs: LatencySummary;
  readonly toCallbackMs: LatencySummary | null;
  readonly callbacks: { ok: number; bad: number; duplicates: number } | null;
  readonly note: string;
  /** job_id → [submit started, 202 read] (ms, wall clock), every `stampEvery`-th job. */
  readonly stamps?: Record<string, readonly [number, number]>;
}

const FINAL = new Set(["done", "error", "rejected", "completed", "failed"]);

export async function runE2e(spec: E2eSpec): Promise<E2eResult> {
  const auth = { authorization: `Bearer ${spec.token}` };
  const postHeaders = { ...auth, "content-type": "application/json" };
  const submitTimes = new Map<string, number>();
  const submitLatency: number[] = [];
  const stamps: Record<string, readonly [number, number]> = {};
  const toDone: number[] = [];
  const status: Record<string, number> = {};
  const pollers: Promise<void>[] = [];
  let accepted = 0;
  let errors = 0;

  const poll = async (jobId: string, t0: number) => {
    const deadline = t0 + spec.timeoutSec * 1000;
    while (nowMs() < deadline) {
      try {
        const res = await fetch(`${spec.base}/jobs/${jobId}`, { headers: auth });
        if (res.ok) {
          const job = (await res.json()) as { status?: string };
          if (job.status && FINAL.has(job.status)) {
            toDone.push(nowMs() - t0);
            return;
          }
        } else await res.arrayBuffer();
      } catch {
        // transient: try again
      }
      await Bun.sleep(spec.pollMs);
    }
  };

  const submit = async (i: number) => {
    const body = JSON.stringify({
      request_id: `${spec.prefix}-${i}`,
      route: spec.route,
      input: `e2e ${i}`,
      ...(spec.callbackUrl ? { callback_url: spec.callbackUrl } : {}),
    });
    const t0 = nowMs();
    try {
      const res = await fetch(`${spec.base}/run`, { method: "POST", headers: postHeaders, body });
      const text = await res.text();
      const acceptedAt = nowMs();
      status[res.status] = (status[res.status] ?? 0) + 1;
      submitLatency.push(acceptedAt - t0);
      if (res.status !== 202) {
        errors++;
        return;
      }
      accepted++;
      const jobId = (JSON.parse(text) as { job_id: string }).job_id;
      submitTimes.set(jobId, t0);
      if (spec.stampEvery && i % spec.stampEvery === 0) stamps[jobId] = [t0, acceptedAt];
      if (i % spec.sampleEvery === 0) pollers.push(poll(jobId, t0));
    } catch {
      errors++;
    }
  };

  const start = nowMs();
  let submitted = 0;
  if (spec.rate && spec.durationSec) {
    const total = Math.round(spec.rate * spec.durationSec);
    const inflight = new Set<Promise<void>>();
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / spec.rate;
      const wait = due - nowMs();
      if (wait > 1) await Bun.sleep(wait);
      const p = submit(i).finally(() => inflight.delete(p));
      inflight.add(p);
      submitted++;
    }
    await Promise.all(inflight);
  } else {
    const total = spec.jobs ?? 1000;
    let next = 0;
    await Promise.all(
      Array.from({ length: spec.concurrency ?? 64 }, async () => {
        while (next < total) {
          const i = next++;
          submitted++;
          await submit(i);
        }
      }),
    );
  }
  const submitEnd = nowMs();

  // Completion: callbacks counted by the receiver, or (without callbacks) GET sweeps.
  let completed = 0;
  let lastCompletion = submitEnd;
  let callbacks: E2eResult["callbacks"] = null;
  let toCallback: LatencySummary | null = null;
  const deadline = start + spec.timeoutSec * 1000;
  if (spec.callbackUrl && spec.receiverUrl) {
    let count = { ok: 0, bad: 0, duplicates: 0, unique: 0, last: 0 };
    while (nowMs() < deadline) {
      count = (await (await fetch(`${spec.receiverUrl}/count`)).json()) as typeof count;
      if (count.unique >= accepted) break;
      await Bun.sleep(100);
    }
    const stats = (await (await fetch(`${spec.receiverUrl}/stats`)).json()) as {
      ok: number;
      bad: number;
      duplicates: number;
      times: Record<string, number>;
    };
    const latencies: number[] = [];
    for (const [jobId, t0] of submitTimes) {
      const at = stats.times[jobId];
      if (at !== undefined) latencies.push(at - t0);
    }
    completed = latencies.length;
    lastCompletion = Math.max(...Object.values(stats.times), submitEnd);
    toCallback = summarize(latencies);
    callbacks = { ok: stats.ok, bad: stats.bad, duplicates: stats.duplicates };
  } else {
    let pending = [...submitTimes.keys()];
    while (pending.length > 0 && nowMs() < deadline) {
      const still: string[] = [];
      let cursor = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (cursor < pending.length) {
            const jobId = pending[cursor++] as string;
            const res = await fetch(`${spec.base}/jobs/${jobId}`, { headers: auth });
            const job = (await res.json()) as { status?: string };
            if (!(job.status && FINAL.has(job.status))) still.push(jobId);
          }
        }),
      );
      if (still.length < pending.length) lastCompletion = nowMs();
      completed += pending.length - still.length;
      pending = still;
      if (pending.length > 0) await Bun.sleep(100);
    }
  }
  await Promise.all(pollers);
  const wallSec = (lastCompletion - start) / 1000;
  return {
    submitted,
    accepted,
    submitErrors: errors,
    submitStatus: status,
    submitLatencyMs: summarize(submitLatency),
    submitPerSec: Math.round(accepted / ((submitEnd - start) / 1000)),
    completed,
    completedPerSec: Math.round(completed / wallSec),
    wallSec: round(wallSec),
    toDoneMs: summarize(toDone),
    toCallbackMs: toCallback,
    callbacks,
    note:
      spec.callbackUrl && spec.receiverUrl
        ? "completion = signed callback verified by the receiver"
        : "completion = final status seen by GET sweeps (no callbacks)",
    ...(spec.stampEvery ? { stamps } : {}),
  };
}

if (import.meta.main) {
  const spec = JSON.parse(process.argv[2] ?? "{}") as E2eSpec;
  const result = await runE2e(spec);
  await writeResultLine("RESULT", result);
  process.exit(0);
}
