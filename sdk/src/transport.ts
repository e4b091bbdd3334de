import { backoffDelay, type Clock } from "./clock.js";
import { apiErrorFrom, SwitchyardNetworkError } from "./errors.js";
import { parseRetryAfter } from "./retry-after.js";

/** The subset of fetch the client needs; pass your own for proxies, tracing or tests. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

export interface RetryOptions {
  /** Attempts in total, including the first. Default 4. */
  maxAttempts?: number;
  /** First backoff step. Default 250 ms. */
  baseDelayMs?: number;
  /** Backoff cap. Default 8 s. */
  maxDelayMs?: number;
  /** A Retry-After longer than this is not waited out; the error is thrown instead. Default 60 s. */
  maxRetryAfterMs?: number;
}

export interface TransportConfig {
  baseUrl: string;
  token: string;
  fetch: FetchLike;
  clock: Clock;
  requestTimeoutMs: number;
  retry: Required<RetryOptions>;
  random: () => number;
}

export interface ApiRequest {
  method: "GET" | "POST";
  /** Path with its query string, e.g. "/jobs?limit=10". */
  path: string;
  /** Serialised once as JSON, so every attempt sends identical bytes. */
  payload?: unknown;
  signal?: AbortSignal | undefined;
  /** Overrides retry.maxAttempts for this call. */
  maxAttempts?: number;
  /** Named in SwitchyardNetworkError so callers know which id to re-send. */
  requestId?: string;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: unknown;
}

/** Statuses after which the same request is sent again (429 and 5xx but 501 and 505). */
const RETRYABLE = new Set([429, 500, 502, 503, 504]);

class AttemptTimeout extends Error {}

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

type Attempt =
  | { kind: "answer"; response: Response; body: unknown }
  | { kind: "failed"; failure: "timeout" | "network"; cause: unknown };

async function attemptOnce(
  config: TransportConfig,
  url: string,
  init: RequestInit,
  signal: AbortSignal | undefined,
): Promise<Attempt> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new AttemptTimeout()), config.requestTimeoutMs);
  const onOuterAbort = () => controller.abort(signal?.reason);
  signal?.addEventListener("abort", onOuterAbort, { once: true });
  try {
    signal?.throwIfAborted();
    const response = await config.fetch(url, { ...init, signal: controller.signal });
    return { kind: "answer", response, body: await readJson(response) };
  } catch (err) {
    // The caller's own abort wins over retrying.
    if (signal?.aborted) throw signal.reason;
    const timedOut = controller.signal.reason instanceof AttemptTimeout;
    return { kind: "failed", failure: timedOut ? "timeout" : "network", cause: err };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onOuterAbort);
  }
}

/**
 * Sends one API call with bounded retries. The body is serialised once, so every attempt sends
 * identical bytes (for run(): the same request_id). Retries timeouts, network errors, 429 and
 * 5xx, waiting max(backoff, Retry-After). Redirects are never followed.
 */
export async function call(config: TransportConfig, request: ApiRequest): Promise<ApiResponse> {
  const { clock, retry } = config;
  const maxAttempts = request.maxAttempts ?? retry.maxAttempts;
  const body = request.payload === undefined ? undefined : JSON.stringify(request.payload);
  const headers: Record<string, string> = {
    authorization: `Bearer ${config.token}`,
    accept: "application/json, application/problem+json",
  };
  if (body !== undefined) headers["content-type"] = "application/json";
  const url = `${config.baseUrl.replace(/\/+$/, "")}${request.path}`;
  const init: RequestInit = { method: request.method, headers, body, redirect: "manual" };

  for (let attempt = 1; ; attempt++) {
    const more = attempt < maxAttempts;
    const outcome = await attemptOnce(config, url, init, request.signal);
    if (outcome.kind === "failed") {
      if (!more) {
        throw new SwitchyardNetworkError({
          kind: outcome.failure,
          attempts: attempt,
          requestId: request.requestId,
          cause: outcome.cause,
        });
      }
      await clock.sleep(backoffDelay(attempt, retry, config.random), request.signal);
      continue;
    }
    const { response } = outcome;
    if (response.ok)
      return { status: response.status, headers: response.headers, body: outcome.body };
    const retryAfterSec = parseRetryAfter(response.headers.get("retry-after"), clock.now());
    const error = apiErrorFrom({
      status: response.status,
      statusText: response.statusText,
      body: outcome.body,
      retryAfterSec,
    });
    const retryAfterMs = (retryAfterSec ?? 0) * 1000;
    if (!more || !RETRYABLE.has(response.status) || retryAfterMs > retry.maxRetryAfterMs) {
      throw error;
    }
    const backoff = backoffDelay(attempt, retry, config.random);
    await clock.sleep(Math.max(backoff, retryAfterMs), request.signal);
  }
}
