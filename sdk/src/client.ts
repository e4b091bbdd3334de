import { type Clock, systemClock } from "./clock.js";
import {
  jobPath,
  listJobsPath,
  paginate,
  parseCancel,
  parseJob,
  parseJobPage,
} from "./jobs-query.js";
import { call, type FetchLike, type RetryOptions, type TransportConfig } from "./transport.js";
import type { CancelResult, Job, JobPage, ListJobsParams, RunRequest, RunResult } from "./types.js";
import { type WaitOptions, waitForJob } from "./wait.js";

export interface SwitchyardClientOptions {
  /** The hub's address, e.g. "https://switchyard.example.com"; `/run` and `/jobs` are appended. */
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

export interface SwitchyardClient {
  /**
   * Submits a run (POST /run). Retries timeouts, network errors, 429 and 5xx with the SAME body,
   * so the same request_id: a retry can never start a second job. Throws ConflictError
   * (request_id_conflict) when the request_id was used with a different body, and
   * SwitchyardNetworkError when no attempt got an answer.
   */
  run(request: RunRequest, options?: RequestOptions): Promise<RunResult>;
  /** Reads a job (GET /jobs/{job_id}); unknown and other clients' jobs are a NotFoundError. */
  getJob(jobId: string, options?: RequestOptions): Promise<Job>;
  /** Reads one page of this client's jobs (GET /jobs), newest first. */
  listJobs(params?: ListJobsParams, options?: RequestOptions): Promise<JobPage>;
  /** Every job matching the filters, reading page after page as you iterate. */
  iterateJobs(params?: ListJobsParams, options?: RequestOptions): AsyncIterable<Job>;
  /**
   * Cancels a job that is not final (POST /jobs/{job_id}/cancel). Safe to retry: a second cancel
   * answers `cancelled`. A job that ended otherwise is a ConflictError with code `job_final`.
   */
  cancelJob(jobId: string, options?: RequestOptions): Promise<CancelResult>;
  /**
   * Polls until the job is final (done, error, rejected) with capped exponential backoff,
   * honouring Retry-After. Throws WaitForJobTimeoutError after `timeoutMs`.
   */
  waitForJob(jobId: string, options?: WaitOptions): Promise<Job>;
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

function transportConfig(options: SwitchyardClientOptions): TransportConfig {
  if (!options?.baseUrl) throw new TypeError("baseUrl is required");
  if (!options.token) throw new TypeError("token is required");
  return {
    baseUrl: options.baseUrl,
    token: options.token,
    fetch: options.fetch ?? ((url, init) => fetch(url, init)),
    clock: options.clock ?? systemClock,
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
    random: options.random ?? Math.random,
    retry: {
      maxAttempts: options.retry?.maxAttempts ?? 4,
      baseDelayMs: options.retry?.baseDelayMs ?? 250,
      maxDelayMs: options.retry?.maxDelayMs ?? 8_000,
      maxRetryAfterMs: options.retry?.maxRetryAfterMs ?? 60_000,
    },
  };
}

/** Creates a client for the Switchyard Client API v1. Dependencies are injected, nothing is global. */
export function createSwitchyardClient(options: SwitchyardClientOptions): SwitchyardClient {
  const config = transportConfig(options);

  const run: SwitchyardClient["run"] = async (request, { signal } = {}) => {
    assertRunRequest(request);
    const response = await call(config, {
      method: "POST",
      path: "/run",
      payload: request,
      signal,
      requestId: request.request_id,
    });
    return {
      created: response.status === 202,
      job: parseJob(response.status, response.body),
      location: response.headers.get("location") ?? undefined,
    };
  };

  const getJob: SwitchyardClient["getJob"] = async (jobId, { signal } = {}) => {
    const response = await call(config, { method: "GET", path: jobPath(jobId), signal });
    return parseJob(response.status, response.body);
  };

  const listJobs: SwitchyardClient["listJobs"] = async (params = {}, { signal } = {}) => {
    const response = await call(config, { method: "GET", path: listJobsPath(params), signal });
    return parseJobPage(response.status, response.body);
  };

  const iterateJobs: SwitchyardClient["iterateJobs"] = (params = {}, requestOptions = {}) => {
    listJobsPath(params); // bad filters fail here, before the first read
    return paginate(params, (page) => listJobs(page, requestOptions));
  };

  const cancelJob: SwitchyardClient["cancelJob"] = async (jobId, { signal } = {}) => {
    const path = jobPath(jobId, "/cancel");
    const response = await call(config, { method: "POST", path, signal });
    return parseCancel(response.status, response.body);
  };

  return {
    run,
    getJob,
    listJobs,
    iterateJobs,
    cancelJob,
    waitForJob: (jobId, waitOptions) => waitForJob(config, jobId, waitOptions),
  };
}

/** Makes a fresh request_id. Call it once per unit of work and store it with that work. */
export function newRequestId(): string {
  return globalThis.crypto.randomUUID();
}
