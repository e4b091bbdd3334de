import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { requireConnected } from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import type { Config, RouteTable } from "../../shared/config/index.ts";
import {
  InvalidRequestError,
  MalformedJsonError,
  NotFoundError,
  UnsupportedMediaTypeError,
} from "../../shared/errors/index.ts";
import { readBodyCapped } from "../../shared/http/index.ts";
import type { IdGenerator, JobIdDeriver } from "../../shared/ids/index.ts";
import { JOB_ID_PATTERN } from "../../shared/ids/index.ts";
import type { EventLayout } from "../../shared/jobs/index.ts";
import { findJobClient, type JobRef, readLastMessage } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import type { OperatorAuth, OperatorCaller } from "./auth.ts";

/** Everything the operator API's handlers use. */
export interface AdminContext {
  readonly nc: NatsConnection;
  /** False while NATS is disconnected: actions answer 503 at once instead of after a timeout. */
  readonly natsConnected: () => boolean;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  readonly config: Config;
  readonly routes: RouteTable;
  /** The search index; without it search, counts and bulk actions answer 404. */
  readonly store?: IndexStore;
  readonly auth: OperatorAuth;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly deriveJobId: JobIdDeriver;
  readonly logger: Logger;
  /** The address a request is attributed to (the ingress's rule, trusted proxies included). */
  readonly addressOf: (request: Request) => string;
  /** Passed to cancels made here (shared/actions CancelDeps `appended`): read-your-writes. */
  readonly appended?: (ref: JobRef, seq: number) => void;
}

export const NO_STORE = { "cache-control": "no-store" };

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...NO_STORE, ...headers },
  });
}

/**
 * 503 at once while NATS is away, before a handler reads or appends events: nats.js would hold
 * the request until its timeout (5 s) and then fail it anyway. Reads served by the search index
 * (search, counts, failed callbacks) do not call this and keep answering.
 */
export function requireEventStore(ctx: AdminContext): void {
  requireConnected(
    ctx.natsConnected,
    "The event store is not reachable; nothing was changed. Retry shortly.",
  );
}

/** The caller of a request (401 otherwise). */
export function callerOf(ctx: AdminContext, request: Request): Promise<OperatorCaller> {
  return ctx.auth.caller(request, ctx.addressOf(request));
}

export function requireStore(ctx: AdminContext): IndexStore {
  if (!ctx.store) {
    throw new NotFoundError({
      detail: "The search index is not enabled on this hub (index.enabled).",
    });
  }
  return ctx.store;
}

const JSON_TYPE = /^application\/json\s*(;|$)/i;
const MAX_BODY = 64 * 1024;
/** Fatal: a body that is not UTF-8 is malformed, not silently repaired. Stateless, so shared. */
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A JSON object body of at most 64 KiB; `undefined` when the request has none. Read through the
 * ingress's capped reader (this API shares its server, whose own body limit is off): a larger body,
 * declared or chunked, is a 413 without reading past the limit, and a client that goes away
 * mid-body is a disconnect, not a server error. /console/login reads it before any credential.
 */
export async function readBody(request: Request): Promise<Record<string, unknown> | undefined> {
  const bytes = await readBodyCapped(request, MAX_BODY, "operator API bodies, fixed");
  let text: string;
  let value: unknown;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new MalformedJsonError({ detail: "The body is not UTF-8." });
  }
  if (text.trim() === "") return undefined;
  if (!JSON_TYPE.test(request.headers.get("content-type") ?? "")) {
    throw new UnsupportedMediaTypeError({ detail: "Content-Type must be application/json." });
  }
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new MalformedJsonError({
      detail: `The body is not valid JSON: ${(err as Error).message}`.slice(0, 300),
    });
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidRequestError({
      detail: "The body must be a JSON object.",
      errors: [{ pointer: "", message: "must be a JSON object" }],
    });
  }
  return value as Record<string, unknown>;
}

/** An action takes no body, or `{}`. */
export async function noBody(request: Request): Promise<void> {
  const body = await readBody(request);
  if (body !== undefined && Object.keys(body).length > 0) {
    const key = Object.keys(body)[0] ?? "";
    throw new InvalidRequestError({
      detail: `${key}: this action takes no body`,
      errors: [{ pointer: `/${key}`, message: "unknown field" }],
    });
  }
}

/**
 * The client that owns a job: the configured client whose subject holds its run.requested (one
 * read by subject each, at once), or (a client removed since) the stream's subjects.
 */
export async function ownerOf(ctx: AdminContext, jobId: string): Promise<string | undefined> {
  if (!JOB_ID_PATTERN.test(jobId)) return undefined;
  const clientIds = ctx.config.clients.map((c) => c.id);
  const runs = await Promise.all(
    clientIds.map((client_id) => readLastMessage(ctx, { client_id, job_id: jobId }, "run")),
  );
  const found = clientIds.find((_, i) => runs[i] !== null);
  return found ?? findJobClient(ctx, jobId);
}

/** The audit name of an operator in events that take a free-text requester. */
export const operatorName = (caller: OperatorCaller) => `operator:${caller.operator.id}`;
