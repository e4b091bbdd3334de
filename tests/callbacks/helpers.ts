import {
  type CallbackService,
  callbackSettings,
  createCallbackService,
} from "../../services/callback/index.ts";
import { type RunningHub, startServices } from "../../services/runtime/run.ts";
import { hashToken } from "../../shared/auth/index.ts";
import { decodeEvent, TOPOLOGY } from "../../shared/bus/index.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { type Config, createRouteTable, parseConfig } from "../../shared/config/index.ts";
import type { JobEvent } from "../../shared/domain/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { appendEvent, SINGLE_PARTITION_LAYOUT } from "../../shared/jobs/index.ts";
import type { Resolver } from "../../shared/net/index.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { testIndexYaml } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";

/** Two secrets: `acme` signs with both (a rotation), `solo` with one, `nosecret` has none. */
export const SECRET_A = generateWebhookSecret();
export const SECRET_B = generateWebhookSecret(24);
export const SOLO_SECRET = generateWebhookSecret(64);

export const TOKENS = {
  acme: "acme-token-0123456789abcdef",
  solo: "solo-token-0123456789abcdef",
  nosecret: "nosecret-token-0123456789abcdef",
} as const;

/** The hub config of the callback tests: short retry schedule, 127.0.0.1 allowlisted. */
export function callbackYaml(natsUrl: string, schedule: readonly string[] = ["100ms", "200ms"]) {
  return `
server: { host: 127.0.0.1, port: 0 }
monitoring: { host: 127.0.0.1, port: 0 }
nats: { url: "${natsUrl}" }
log: { level: info }
callbacks:
  allow_cidrs: ["127.0.0.1/32"]
  retry_schedule: ${JSON.stringify(schedule)}
  jitter: 0
  timeout: 2s
clients:
  - id: acme
    token_sha256: ["${hashToken(TOKENS.acme)}"]
    routes: ["demo.*"]
    runs_per_minute: 100000
    callback_secrets: ["${SECRET_A}", "${SECRET_B}"]
  - id: solo
    token_sha256: ["${hashToken(TOKENS.solo)}"]
    routes: ["demo.*"]
    runs_per_minute: 100000
    callback_secrets: ["${SOLO_SECRET}"]
    callback_retry_schedule: ["50ms"]
  - id: nosecret
    token_sha256: ["${hashToken(TOKENS.nosecret)}"]
    routes: ["demo.*"]
    runs_per_minute: 100000
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
${testIndexYaml()}
`;
}

export interface CallbackHub extends AsyncDisposable {
  readonly nats: TestNats;
  readonly config: Config;
  readonly running: RunningHub;
  readonly baseUrl: string;
  logs(): string;
  run(token: string, body: Record<string, unknown>): Promise<Response>;
  job(token: string, jobId: string): Promise<Record<string, unknown>>;
  /**
   * Ends a job the way an executor would (job.done or job.error on `.job`), so these tests do not
   * depend on any executor.
   */
  finish(
    clientId: string,
    jobId: string,
    outcome?: { output: unknown } | { error: string },
  ): Promise<void>;
  /** Every event on the job's `.cb` subject, in order. */
  cbEvents(clientId: string, jobId: string): Promise<JobEvent[]>;
  stop(): Promise<void>;
}

export interface CallbackHubOptions {
  /** Start the callback service in this process (with the resolver); false to run it elsewhere. */
  readonly inProcessCallback?: boolean;
  readonly resolver?: Resolver;
  readonly schedule?: readonly string[];
}

/**
 * Ingress and projector in this process (tests end jobs with `finish`) against a private nats-server, plus (unless
 * told otherwise) the callback service built directly with an injected resolver.
 */
export async function startCallbackHub(options: CallbackHubOptions = {}): Promise<CallbackHub> {
  const nats = await startNats();
  const config = parseConfig(callbackYaml(nats.url, options.schedule), {}, "callback test config");
  const { logger, logs } = captureLogger();
  const running = await startServices(["ingress", "projector"], {
    config,
    logger,
    clock: systemClock,
    ids: randomIds,
  });
  let callback: CallbackService | undefined;
  if (options.inProcessCallback ?? true) {
    callback = createCallbackService({
      layout: SINGLE_PARTITION_LAYOUT,
      js: running.hub.js,
      jsm: running.hub.jsm,
      nc: running.hub.nc,
      settings: callbackSettings(config),
      client: createRouteTable(config).client,
      logger: logger.child({ component: "callback" }),
      clock: systemClock,
      ids: randomIds,
      ...(options.resolver ? { resolver: options.resolver } : {}),
    });
    await callback.start();
  }
  const baseUrl = running.ingress?.url ?? "";
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await callback?.stop();
    await running.stop();
    await nats.stop();
  };
  return {
    nats,
    config,
    running,
    baseUrl,
    logs,
    run: (token, body) =>
      fetch(`${baseUrl}/run`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    async job(token, jobId) {
      const res = await fetch(`${baseUrl}/jobs/${jobId}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return (await res.json()) as Record<string, unknown>;
    },
    async finish(clientId, jobId, outcome = { output: "hello" }) {
      const base = {
        id: randomIds.next("evt"),
        schema_version: 1 as const,
        job_id: jobId,
        client_id: clientId,
        occurred_at: new Date().toISOString(),
      };
      const event: JobEvent =
        "error" in outcome
          ? { ...base, type: "job.error", data: { code: "failed", message: outcome.error } }
          : { ...base, type: "job.done", data: { output: outcome.output } };
      const result = await appendEvent(
        { js: running.hub.js, layout: SINGLE_PARTITION_LAYOUT },
        event,
        { expectedLastSubjectSeq: 0 },
      );
      if (result.kind === "conflict") throw new Error(`job ${jobId} already has a status event`);
    },
    async cbEvents(clientId, jobId) {
      const events: JobEvent[] = [];
      let seq = 1;
      for (;;) {
        const msg = await running.hub.jsm.direct.getMessage(TOPOLOGY.eventsStream, {
          seq,
          next_by_subj: SINGLE_PARTITION_LAYOUT.subject(
            { client_id: clientId, job_id: jobId },
            "cb",
          ),
        });
        if (msg === null) return events;
        events.push(decodeEvent(msg.data));
        seq = msg.seq + 1;
      }
    },
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

/** One request a receiver got: the raw body and the headers, exactly as sent. */
export interface Received {
  readonly body: string;
  readonly headers: Record<string, string>;
  readonly path: string;
}

export interface Receiver extends AsyncDisposable {
  readonly port: number;
  readonly url: string;
  readonly received: Received[];
  /** Requests to one path. */
  on(path: string): Received[];
  stop(): Promise<void>;
}

/**
 * An HTTP receiver on 127.0.0.1. `answers[path]` lists the responses for successive requests to
 * that path (the last one repeats); unknown paths answer 204.
 */
export function startReceiver(
  answers: Record<string, readonly (() => Response)[]> = {},
  port = 0,
): Receiver {
  const received: Received[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port,
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const body = await req.text();
      received.push({ body, headers: Object.fromEntries(req.headers.entries()), path });
      const list = answers[path] ?? [];
      const n = received.filter((r) => r.path === path).length;
      const answer = list[Math.min(n - 1, list.length - 1)];
      return answer ? answer() : new Response(null, { status: 204 });
    },
  });
  const stop = async () => {
    await server.stop(true);
  };
  return {
    port: server.port ?? 0,
    url: `http://127.0.0.1:${server.port}`,
    received,
    on: (path) => received.filter((r) => r.path === path),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}

let counter = 0;
/** A unique request id. */
export const rid = () => `cb-${Date.now()}-${counter++}`;
