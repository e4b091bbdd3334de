import { parseRetryAfter } from "../shared/net/retry-after.ts";
import { backoffDelay, type Clock, systemClock } from "./clock.ts";
import { SwitchyardApiError, SwitchyardNetworkError, WaitForJobTimeoutError } from "./errors.ts";
import { call, type FetchLike, type RetryOptions, type TransportConfig } from "./transport.ts";
import {
  isFinalStatus,
  type Job,
  type RunAccepted,
  type RunRequest,
  type RunResult,
} from "./types.ts";

export interface SwitchyardClientOptions {
  /** Service base address, e.g. "https://switchyard.example.com/v1". */
  baseUrl: string;
  /** Client token, sent as `Authorization: Bearer <token>`. */
  token: string;
  /** Defaults to the global fetch. */
  fetch?: FetchLike;
  /** Defaults to real time; inject a fake to test code that waits. */
  clock?: Clock;
  /** Per-attempt timeout. Default 10 s. */
  requestTimeoutMs?: number;
  retry?: RetryOptions;
  /** Jitter source in [0, 1). Default Math.random. */
  random?: () => number;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

export interface WaitOptions {
  /** Give up after this long (the job keeps running). Default 5 minutes. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** First poll interval. Default 500 ms. */
  initialIntervalMs?: number;
  /** Poll interval cap. Default 10 s. */
  maxIntervalMs?: number;
}

export interface SwitchyardClient {
  /**
   * Submits a run. Retries timeouts, network errors and 429/5xx with the SAME body and
   * request_id, so a retry can never start a second job. Throws SwitchyardApiError for problems
   * (409 idempotency_conflict when the request_id was used with a different body) and
   * SwitchyardNetworkError when no attempt got an answer.
   */
  run(request: RunRequest, options?: RequestOptions): Promise<RunResult>;
  /** Reads a job; 404 (unknown or another client's job) is a SwitchyardApiError. */
  getJob(jobId: string, options?: RequestOptions): Promise<Job>;
  /**
   * Polls until the job is final (done, error, rejected) with capped exponential backoff,
   * honouring Retry-After. Throws WaitForJobTimeoutError after `timeoutMs`.
   */
  waitForJob(jobId: string, options?: WaitOptions): Promise<Job>;
}

/** Transient failures that waitForJob rides out by polling again later. */
function transientDelayMs(err: unknown): number | undefined {
  if (err instanceof SwitchyardNetworkError) return 0;
  if (err instanceof SwitchyardApiError && [429, 502, 503, 504].includes(err.status)) {
    return (err.retryAfterSec ?? 0) * 1000;
  }
  return undefined;
}

function assertRunRequest(request: RunRequest): void {
  if (typeof request?.request_id !== "string" || request.request_id.trim() === "") {
    throw new TypeError(
      "run() needs a request_id: pick one per unit of work and keep it for retries (newRequestId() makes one)",
    );
  }
  if (typeof request.route !== "string" || request.route === "") {
    throw new TypeError("run() needs a route");
  }
  if (typeof request.input !== "string") throw new TypeError("run() needs input as a string");
}

/** Creates a client for the Switchyard Client API v1. Dependencies are injected, nothing is global. */
export function createSwitchyardClient(options: SwitchyardClientOptions): SwitchyardClient {
  if (!options.baseUrl) throw new TypeError("baseUrl is required");
  if (!options.token) throw new TypeError("token is required");
  const clock = options.clock ?? systemClock;
  const config: TransportConfig = {
    baseUrl: options.baseUrl,
    token: options.token,
    fetch: options.fetch ?? ((url, init) => fetch(url, init)),
    clock,
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
    random: options.random ?? Math.random,
    retry: {
      maxAttempts: options.retry?.maxAttempts ?? 4,
      baseDelayMs: options.retry?.baseDelayMs ?? 250,
      maxDelayMs: options.retry?.maxDelayMs ?? 8_000,
      maxRetryAfterMs: options.retry?.maxRetryAfterMs ?? 60_000,
    },
  };
  const jobPath = (jobId: string) => {
    if (!jobId) throw new TypeError("jobId is required");
    return `/jobs/${encodeURIComponent(jobId)}`;
  };

  async function run(request: RunRequest, { signal }: RequestOptions = {}): Promise<RunResult> {
    assertRunRequest(request);
    const response = await call(config, "POST", "/run", request, {
      signal,
      requestId: request.request_id,
    });
    if (response.status === 200) return { created: false, job: response.body as Job };
    const location = response.headers.get("location") ?? undefined;
    return { created: true, job: response.body as RunAccepted, ...(location ? { location } : {}) };
  }

  async function getJob(jobId: string, { signal }: RequestOptions = {}): Promise<Job> {
    return (await call(config, "GET", jobPath(jobId), undefined, { signal })).body as Job;
  }

  async function waitForJob(jobId: string, waitOptions: WaitOptions = {}): Promise<Job> {
    const {
      timeoutMs = 300_000,
      signal,
      initialIntervalMs = 500,
      maxIntervalMs = 10_000,
    } = waitOptions;
    const path = jobPath(jobId);
    const deadline = clock.now() + timeoutMs;
    const policy = { baseDelayMs: initialIntervalMs, maxDelayMs: maxIntervalMs };
    let lastJob: Job | undefined;
    for (let poll = 1; ; poll++) {
      let hintMs = 0;
      try {
        // One attempt per poll: the polling loop itself is the retry.
        const response = await call(config, "GET", path, undefined, { signal, maxAttempts: 1 });
        lastJob = response.body as Job;
        if (isFinalStatus(lastJob.status)) return lastJob;
        hintMs = (parseRetryAfter(response.headers.get("retry-after"), clock.now()) ?? 0) * 1000;
      } catch (err) {
        const transient = transientDelayMs(err);
        if (transient === undefined) throw err;
        hintMs = transient;
      }
      const remaining = deadline - clock.now();
      if (remaining <= 0) throw new WaitForJobTimeoutError(jobId, timeoutMs, lastJob);
      // Polls grow geometrically (no jitter needed: one caller, one job).
      const delay = Math.max(
        backoffDelay(poll, policy, () => 1),
        hintMs,
      );
      await clock.sleep(Math.min(delay, remaining), signal);
    }
  }

  return { run, getJob, waitForJob };
}

/** Makes a fresh request_id. Call it once per unit of work and store it with that work. */
export function newRequestId(): string {
  return globalThis.crypto.randomUUID();
}
