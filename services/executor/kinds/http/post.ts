import type { Clock } from "../../../../shared/clock/index.ts";
import {
  checkJsonShape,
  containsNumber,
  lossyNumbers,
  OUTPUT_SHAPE_LIMITS,
} from "../../../../shared/json/index.ts";
import { webhookHeaders } from "../../../../shared/webhooks/index.ts";
import { type HttpTask, type Task, toHttpTask } from "../../../../shared/worker/index.ts";

/** How one POST of a task ended, as the dispatcher acts on it. */
export type HttpOutcome =
  | { readonly kind: "done"; readonly output: unknown }
  | { readonly kind: "accepted" }
  | { readonly kind: "refused"; readonly status: number }
  | {
      readonly kind: "retry";
      readonly reason: string;
      readonly status?: number;
      readonly retryAfterMs?: number;
    }
  | { readonly kind: "bad_response"; readonly reason: string }
  /** The answer passed the route's max_response_bytes; reading stopped there. */
  | { readonly kind: "too_large"; readonly limitBytes: number };

export interface PostTaskInput {
  readonly url: string;
  readonly secret: string;
  readonly task: Task;
  readonly attempt: number;
  readonly timeoutMs: number;
  readonly clock: Clock;
  /** Aborts the request on shutdown. */
  readonly signal: AbortSignal;
  /** W3C trace context of the run, sent as the traceparent header. */
  readonly traceparent?: string;
  /**
   * Largest answer body read (routes[].executor.max_response_bytes); past it reading stops and
   * the outcome is too_large. Default {@link DEFAULT_MAX_RESPONSE_BYTES}.
   */
  readonly maxResponseBytes?: number;
}

/** Default answer cap: well inside one NATS message, since the output is stored in job.done. */
export const DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024;

/** Header telling the executor which attempt this is (webhook-id stays the job id). */
export const ATTEMPT_HEADER = "switchyard-attempt";

function retryAfterMs(value: string | null): number | undefined {
  if (!value || !/^\d{1,6}$/.test(value.trim())) return undefined;
  return Number(value.trim()) * 1000;
}

/** The signed request: Standard Webhooks headers with the job id as webhook-id. */
export function signedTaskRequest(
  input: Pick<PostTaskInput, "secret" | "task" | "attempt" | "clock" | "traceparent">,
): { body: string; headers: Record<string, string>; payload: HttpTask } {
  const payload = toHttpTask(input.task);
  const body = JSON.stringify(payload);
  const headers: Record<string, string> = {
    ...webhookHeaders({
      // The job id is the idempotency key: the same on every attempt and every redelivery.
      id: input.task.job_id,
      timestamp: Math.floor(input.clock.now().getTime() / 1000),
      body,
      secrets: [input.secret],
    }),
    [ATTEMPT_HEADER]: String(input.attempt),
    ...(input.traceparent ? { traceparent: input.traceparent } : {}),
  };
  return { body, headers, payload };
}

/**
 * Drops an answer's body unread. Cancelling can fail when the executor already cut the connection
 * (ECONNRESET); the status has decided the outcome by then, so that failure is not an error.
 */
async function discard(res: Response): Promise<void> {
  await res.body?.cancel().catch(() => undefined);
}

/** A failed fetch or body read, as a retry the dispatcher counts against max_attempts. */
function failed(err: unknown): HttpOutcome {
  const name = err instanceof Error ? err.name : "Error";
  return { kind: "retry", reason: name === "TimeoutError" ? "timeout" : "network_error" };
}

/**
 * Reads at most `maxBytes` of a body. Runs under the same signal as the request, so a body that
 * stalls after its headers ends at the attempt's deadline like any other timeout.
 */
async function readCapped(
  res: Response,
  maxBytes: number,
): Promise<{ bytes: Uint8Array } | { tooLarge: true }> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined);
    return { tooLarge: true };
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (res.body) {
    const reader = res.body.getReader();
    for (;;) {
      const step = await reader.read();
      if (step.done) break;
      total += step.value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        return { tooLarge: true };
      }
      chunks.push(step.value);
    }
  }
  return { bytes: Buffer.concat(chunks) };
}

/**
 * POSTs a task and classifies the answer: a 2xx other than 202 with a JSON body → done, 202 → accepted,
 * 408/429/5xx, timeouts and network errors → retry, other 4xx → refused, anything else (a
 * redirect, a 2xx that is not JSON) → bad response, an answer above the cap → too_large. Every
 * byte of the answer is read under the attempt's deadline (`timeoutMs`), so a stalled body is a
 * timeout that counts as an attempt. Redirects are not followed: the executor URL is
 * configuration, and a redirect would carry the signed task somewhere else.
 */
export async function postTask(input: PostTaskInput): Promise<HttpOutcome> {
  const { body, headers } = signedTaskRequest(input);
  let res: Response;
  try {
    res = await fetch(input.url, {
      method: "POST",
      headers,
      body,
      redirect: "manual",
      signal: AbortSignal.any([input.signal, AbortSignal.timeout(input.timeoutMs)]),
    });
  } catch (err) {
    return failed(err);
  }
  const status = res.status;
  if (status === 202) {
    await discard(res);
    return { kind: "accepted" };
  }
  if (status === 408 || status === 429 || status >= 500) {
    await discard(res);
    const after = retryAfterMs(res.headers.get("retry-after"));
    return {
      kind: "retry",
      reason: `http_${status}`,
      status,
      ...(after === undefined ? {} : { retryAfterMs: after }),
    };
  }
  if (status >= 400) {
    await discard(res);
    return { kind: "refused", status };
  }
  if (status < 200 || status >= 300) {
    await discard(res);
    return { kind: "bad_response", reason: `unexpected status ${status}` };
  }
  const limitBytes = input.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  let read: Awaited<ReturnType<typeof readCapped>>;
  try {
    read = await readCapped(res, limitBytes);
  } catch (err) {
    return failed(err);
  }
  if ("tooLarge" in read) return { kind: "too_large", limitBytes };
  const outcome = parseResult(read.bytes);
  // The output is stored re-serialised, where numbers can grow (1e20 → 21 digits): the cap holds
  // for the stored form too, so job.done always fits the NATS message the cap was sized for.
  if (outcome.kind === "done" && Buffer.byteLength(JSON.stringify(outcome.output)) > limitBytes) {
    return { kind: "too_large", limitBytes };
  }
  return outcome;
}

/**
 * The output of a 2xx JSON answer, bounded in depth so everything downstream can walk it, with
 * no number a double cannot keep (the output is stored as JavaScript serialises it).
 */
function parseResult(bytes: Uint8Array): HttpOutcome {
  let value: unknown;
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    value = JSON.parse(text);
  } catch {
    return { kind: "bad_response", reason: "the 2xx body is not JSON" };
  }
  // A body {"output": …} carries the output; any other JSON value is the output itself.
  const output =
    typeof value === "object" && value !== null && !Array.isArray(value) && "output" in value
      ? value.output
      : value;
  const problem = checkJsonShape(output, OUTPUT_SHAPE_LIMITS);
  if (problem) {
    return { kind: "bad_response", reason: `the output${problem.pointer} ${problem.message}` };
  }
  const lossy = containsNumber(value) ? lossyNumbers(text) : [];
  if (lossy.length > 0) {
    return {
      kind: "bad_response",
      reason: `the number ${lossy[0]?.slice(0, 40)} cannot be kept exactly; send it as a string`,
    };
  }
  return { kind: "done", output };
}
