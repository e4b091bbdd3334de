import { backoffDelay } from "./clock.js";
import { SwitchyardApiError, SwitchyardNetworkError, WaitForJobTimeoutError } from "./errors.js";
import { jobPath, parseJob } from "./jobs-query.js";
import { parseRetryAfter } from "./retry-after.js";
import { call, type TransportConfig } from "./transport.js";
import { isFinalStatus, type Job } from "./types.js";

export interface WaitOptions {
  /** Give up after this long (the job keeps running). Default 5 minutes. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** First poll interval. Default 500 ms. */
  initialIntervalMs?: number;
  /** Poll interval cap. Default 10 s. */
  maxIntervalMs?: number;
}

/** Transient failures that waitForJob rides out by polling again later; undefined: give up. */
function transientDelayMs(err: unknown): number | undefined {
  if (err instanceof SwitchyardNetworkError) return 0;
  if (err instanceof SwitchyardApiError && err.retryable) return (err.retryAfterSec ?? 0) * 1000;
  return undefined;
}

/**
 * Polls GET /jobs/{job_id} until the job is final. Intervals double from `initialIntervalMs` up
 * to `maxIntervalMs`; a Retry-After from the hub stretches them. Transient failures (timeouts,
 * network errors, 429, 5xx) are polled through; any other problem ends the wait at once.
 */
export async function waitForJob(
  config: TransportConfig,
  jobId: string,
  options: WaitOptions = {},
): Promise<Job> {
  const { timeoutMs = 300_000, signal, initialIntervalMs = 500, maxIntervalMs = 10_000 } = options;
  const { clock } = config;
  const path = jobPath(jobId);
  const deadline = clock.now() + timeoutMs;
  const policy = { baseDelayMs: initialIntervalMs, maxDelayMs: maxIntervalMs };
  let lastJob: Job | undefined;
  for (let poll = 1; ; poll++) {
    let hintMs = 0;
    try {
      // One attempt per poll: the polling loop itself is the retry.
      const response = await call(config, { method: "GET", path, signal, maxAttempts: 1 });
      lastJob = parseJob(response.status, response.body);
      if (isFinalStatus(lastJob.status)) return lastJob;
      hintMs = (parseRetryAfter(response.headers.get("retry-after"), clock.now()) ?? 0) * 1000;
    } catch (err) {
      const transient = transientDelayMs(err);
      if (transient === undefined) throw err;
      hintMs = transient;
    }
    const remaining = deadline - clock.now();
    if (remaining <= 0) throw new WaitForJobTimeoutError(jobId, timeoutMs, lastJob);
    // Polls grow geometrically without jitter: one caller polling one job has nobody to spread from.
    const delay = Math.max(
      backoffDelay(poll, policy, () => 1),
      hintMs,
    );
    await clock.sleep(Math.min(delay, remaining), signal);
  }
}
