import type { Clock } from "../../shared/clock/index.ts";
import { webhookHeaders } from "../../shared/webhooks/index.ts";
import { type HttpTask, type Task, toHttpTask } from "../../shared/worker/index.ts";

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
  | { readonly kind: "bad_response"; readonly reason: string };

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
}

/** Largest response body read from an executor; a result above it is a bad response. */
const MAX_RESPONSE_BYTES = 10 * 1024 * 1024;

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
 * POSTs a task and classifies the answer: a 2xx other than 202 with a JSON body → done, 202 → accepted,
 * 408/429/5xx, timeouts and network errors → retry, other 4xx → refused, anything else (a
 * redirect, a 2xx that is not JSON) → bad response. Redirects are not followed: the executor URL
 * is configuration, and a redirect would carry the signed task somewhere else.
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
    const name = err instanceof Error ? err.name : "Error";
    return { kind: "retry", reason: name === "TimeoutError" ? "timeout" : "network_error" };
  }
  const status = res.status;
  if (status === 202) {
    await res.body?.cancel();
    return { kind: "accepted" };
  }
  if (status === 408 || status === 429 || status >= 500) {
    await res.body?.cancel();
    const after = retryAfterMs(res.headers.get("retry-after"));
    return {
      kind: "retry",
      reason: `http_${status}`,
      status,
      ...(after === undefined ? {} : { retryAfterMs: after }),
    };
  }
  if (status >= 400) {
    await res.body?.cancel();
    return { kind: "refused", status };
  }
  if (status < 200 || status >= 300) {
    await res.body?.cancel();
    return { kind: "bad_response", reason: `unexpected status ${status}` };
  }
  const bytes = new Uint8Array(await res.arrayBuffer());
  if (bytes.byteLength > MAX_RESPONSE_BYTES) {
    return { kind: "bad_response", reason: "the result is larger than 10 MiB" };
  }
  try {
    const value: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    // A body {"output": …} carries the output; any other JSON value is the output itself.
    const output =
      typeof value === "object" && value !== null && !Array.isArray(value) && "output" in value
        ? value.output
        : value;
    return { kind: "done", output };
  } catch {
    return { kind: "bad_response", reason: "the 2xx body is not JSON" };
  }
}
