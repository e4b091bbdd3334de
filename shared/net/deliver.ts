import { createEgressChecker, type EgressChecker } from "./checker.ts";
import type { AddressRule } from "./classify.ts";
import { type EgressPolicy, type UrlRule, unbracket } from "./policy.ts";
import type { ConnectionPool } from "./pool.ts";
import { type Resolver, resolveAndCheck } from "./resolve.ts";
import { parseRetryAfter } from "./retry-after.ts";
import {
  DeadlineExceeded,
  errorCode,
  type RawResponse,
  ResponseTooLarge,
  type SendRequest,
  StaleConnection,
} from "./send.ts";
import { sendPlain } from "./send-plain.ts";
import { sendTls } from "./send-tls.ts";

/** Why an attempt failed, coarse enough to drive retry policy and metrics. */
export type DeliveryErrorClass =
  | "timeout"
  | "network"
  | "dns"
  | "ssrf_blocked"
  | "redirect"
  | "http_status"
  | "tls"
  /** The answer's body passed maxResponseBytes; the connection was dropped there. */
  | "response_too_large";

/** Outcome of one POST attempt. Contains no bodies, headers or secrets, so it is safe to log. */
export interface DeliveryAttempt {
  /** True only for a 2xx answer. */
  ok: boolean;
  status?: number;
  durationMs: number;
  errorClass?: DeliveryErrorClass;
  /** From a Retry-After header on any answer (seconds or HTTP date, converted to seconds). */
  retryAfterSec?: number;
  /** 410 Gone: the receiver asks us to stop sending to this URL. */
  gone: boolean;
  /** For ssrf_blocked: the rule that refused the destination. */
  rule?: AddressRule | UrlRule;
  /** Short diagnostic (an error code or refusal text), never a body. */
  message?: string;
  /** The checked address the connection was pinned to. */
  address?: string;
}

export interface DeliverOptions extends EgressPolicy {
  url: string;
  /** The exact bytes that were signed. */
  body: string | Uint8Array;
  /** Usually `webhookHeaders(...)`; content-length is added here. */
  headers: Readonly<Record<string, string>>;
  /**
   * Budget for DNS, connect, TLS, request and the whole response, body included, together.
   * Default 15 s. A body still arriving at the deadline makes the attempt a timeout.
   */
  timeoutMs?: number;
  resolver?: Resolver;
  /** Epoch milliseconds; used for durationMs and HTTP-date Retry-After. Default Date.now. */
  clock?: () => number;
  /**
   * Response body bytes read (and discarded) at most; beyond them (declared by Content-Length or
   * counted while reading) the connection is dropped and the attempt fails with
   * `response_too_large`. The callback service passes `callbacks.max_response_bytes`.
   * Default {@link DEFAULT_CALLBACK_RESPONSE_BYTES}.
   */
  maxResponseBytes?: number;
  /** Extra trusted CA certificates (PEM), e.g. for a private PKI or tests. */
  ca?: string | readonly string[];
  /** Keep-alive connections to reuse; without it every attempt opens (and closes) its own. */
  connections?: ConnectionPool;
  /**
   * The policy's checks, remembered across attempts (a caller that delivers often makes one);
   * its policy is used instead of allowCidrs/allowPrivate. DNS is still resolved per attempt.
   */
  checker?: EgressChecker;
}

const TLS_CODES = new Set([
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "EPROTO",
]);

/** Maps a socket/TLS error code to an error class; exported for tests. */
export function classifyNetworkError(code: string | undefined): DeliveryErrorClass {
  if (!code) return "network";
  if (code === "ETIMEDOUT") return "timeout";
  if (code === "ENOTFOUND" || code.startsWith("EAI_")) return "dns";
  if (TLS_CODES.has(code) || /^(ERR_TLS_|ERR_SSL_|CERT_)/.test(code)) return "tls";
  return "network";
}

/**
 * A receiver's answer is status and headers; its body is read only up to this and discarded.
 * Also the default of `callbacks.max_response_bytes` (shared/config/schema.ts).
 */
export const DEFAULT_CALLBACK_RESPONSE_BYTES = 64 * 1024;

/** Plain HTTP through Bun's fetch, TLS through node:https (each file says why). */
function send(request: SendRequest): Promise<RawResponse> {
  return request.url.protocol === "https:" ? sendTls(request) : sendPlain(request);
}

function timeoutAfter(signal: AbortSignal): Promise<"timeout"> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve("timeout");
    signal.addEventListener("abort", () => resolve("timeout"), { once: true });
  });
}

/**
 * Makes ONE callback delivery attempt: checks the URL, resolves and checks every address,
 * POSTs to the checked address (pinned, so DNS rebinding cannot redirect the connection),
 * never follows redirects and treats only 2xx as success. Never throws for network outcomes;
 * retry scheduling is the caller's job.
 */
export async function deliverWebhook(options: DeliverOptions): Promise<DeliveryAttempt> {
  const {
    timeoutMs = 15_000,
    clock = Date.now,
    maxResponseBytes = DEFAULT_CALLBACK_RESPONSE_BYTES,
  } = options;
  const started = clock();
  const finish = (partial: Omit<DeliveryAttempt, "durationMs" | "gone"> & { gone?: boolean }) => ({
    gone: false,
    ...partial,
    durationMs: Math.max(0, clock() - started),
  });
  const checker =
    options.checker ??
    createEgressChecker(
      { allowCidrs: options.allowCidrs, allowPrivate: options.allowPrivate },
      { maxEntries: 0 },
    );

  const checked = checker.url(options.url);
  if (!checked.ok) {
    return finish({
      ok: false,
      errorClass: "ssrf_blocked",
      rule: checked.rule,
      message: checked.message,
    });
  }

  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const host = unbracket(checked.url.hostname);
    const lookup = resolveAndCheck(host, { checker, resolver: options.resolver });
    // A literal address is judged without a lookup: nothing to time out.
    const resolved =
      checker.host(host).kind === "address"
        ? await lookup
        : await Promise.race([lookup, timeoutAfter(controller.signal)]);
    if (resolved === "timeout")
      return finish({ ok: false, errorClass: "timeout", message: "DNS lookup timed out" });
    if (!resolved.ok) {
      return resolved.errorClass === "dns"
        ? finish({ ok: false, errorClass: "dns", message: resolved.message })
        : finish({
            ok: false,
            errorClass: "ssrf_blocked",
            rule: resolved.rule,
            message: resolved.message,
          });
    }
    const pinned = { address: resolved.address, family: resolved.family };
    const request: SendRequest = {
      url: checked.url,
      pinned,
      options,
      maxResponseBytes,
      signal: controller.signal,
    };
    let raw: RawResponse;
    try {
      raw = await send(request).catch(
        // The receiver closed an idle connection as we reused it, so the request almost surely
        // never reached it; send once more (receivers dedupe on webhook-id in any case).
        (err: unknown) => {
          if (!(err instanceof StaleConnection)) throw err;
          return send(request);
        },
      );
    } catch (err) {
      if (err instanceof ResponseTooLarge) {
        return finish({
          ok: false,
          errorClass: "response_too_large",
          status: err.status,
          address: pinned.address,
          message: `the answer is larger than ${maxResponseBytes} bytes`,
        });
      }
      const code = err instanceof DeadlineExceeded ? "DEADLINE" : errorCode(err);
      const errorClass = err instanceof DeadlineExceeded ? "timeout" : classifyNetworkError(code);
      return finish({
        ok: false,
        errorClass,
        address: pinned.address,
        message: `request failed (${String(code ?? "error")})`,
      });
    }
    const retryAfterSec = parseRetryAfter(raw.retryAfter, clock());
    const base = {
      status: raw.status,
      address: pinned.address,
      ...(retryAfterSec === undefined ? {} : { retryAfterSec }),
    };
    if (raw.status >= 200 && raw.status < 300) return finish({ ok: true, ...base });
    if (raw.status >= 300 && raw.status < 400) {
      return finish({
        ok: false,
        errorClass: "redirect",
        message: "redirects are not followed",
        ...base,
      });
    }
    return finish({ ok: false, errorClass: "http_status", gone: raw.status === 410, ...base });
  } finally {
    clearTimeout(timer);
  }
}
