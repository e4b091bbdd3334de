import { parseRetryAfter } from "../shared/net/retry-after.ts";
import { backoffDelay, type Clock } from "./clock.ts";
import { SwitchyardApiError, SwitchyardNetworkError } from "./errors.ts";
import type { ProblemDetails } from "./types.ts";

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

export interface CallOptions {
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

/** Statuses after which the same request may be sent again. */
const RETRYABLE = new Set([429, 502, 503, 504]);

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

function toProblem(status: number, statusText: string, body: unknown): ProblemDetails {
  const b = (typeof body === "object" && body !== null ? body : {}) as Partial<ProblemDetails>;
  return {
    type: typeof b.type === "string" ? b.type : "about:blank",
    title: typeof b.title === "string" ? b.title : statusText || `HTTP ${status}`,
    status,
    detail: typeof b.detail === "string" ? b.detail : undefined,
    code: typeof b.code === "string" ? b.code : `http_${status}`,
    errors: Array.isArray(b.errors) ? b.errors : undefined,
  };
}

/**
 * Sends one API call with bounded retries. The body is serialised once, so every attempt sends
 * identical bytes (for run(): the same request_id). Retries on timeouts, network errors and
 * 429/502/503/504, waiting max(backoff, Retry-After).
 */
export async function call(
  config: TransportConfig,
  method: "GET" | "POST",
  path: string,
  payload: unknown,
  options: CallOptions = {},
): Promise<ApiResponse> {
  const { clock, retry } = config;
  const maxAttempts = options.maxAttempts ?? retry.maxAttempts;
  const body = payload === undefined ? undefined : JSON.stringify(payload);
  const url = `${config.baseUrl.replace(/\/+$/, "")}${path}`;
  const headers: Record<string, string> = {
    authorization: `Bearer ${config.token}`,
    accept: "application/json, application/problem+json",
  };
  if (body !== undefined) headers["content-type"] = "application/json";

  for (let attempt = 1; ; attempt++) {
    const more = attempt < maxAttempts;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new AttemptTimeout()), config.requestTimeoutMs);
    const onOuterAbort = () => controller.abort(options.signal?.reason);
    options.signal?.addEventListener("abort", onOuterAbort, { once: true });
    let response: Response;
    let parsed: unknown;
    try {
      options.signal?.throwIfAborted();
      response = await config.fetch(url, {
        method,
        headers,
        body,
        signal: controller.signal,
        redirect: "manual",
      });
      parsed = await readJson(response);
    } catch (err) {
      // The caller's own abort wins over retrying.
      if (options.signal?.aborted) throw options.signal.reason;
      const kind = controller.signal.reason instanceof AttemptTimeout ? "timeout" : "network";
      if (!more) throw new SwitchyardNetworkError(kind, attempt, options.requestId, err);
      await clock.sleep(backoffDelay(attempt, retry, config.random), options.signal);
      continue;
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onOuterAbort);
    }

    if (response.ok) return { status: response.status, headers: response.headers, body: parsed };
    const retryAfterSec = parseRetryAfter(response.headers.get("retry-after"), clock.now());
    const error = new SwitchyardApiError(
      toProblem(response.status, response.statusText, parsed),
      retryAfterSec,
    );
    const retryAfterMs = (retryAfterSec ?? 0) * 1000;
    if (!more || !RETRYABLE.has(response.status) || retryAfterMs > retry.maxRetryAfterMs)
      throw error;
    await clock.sleep(
      Math.max(backoffDelay(attempt, retry, config.random), retryAfterMs),
      options.signal,
    );
  }
}
