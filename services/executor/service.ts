import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Clock } from "../../shared/clock/index.ts";
import {
  type Config,
  parseDuration,
  type RouteConfig,
  type RouteTable,
} from "../../shared/config/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { EventLayout } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { ensureScheduleStreams } from "../../shared/schedule/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import { openToolSetStore } from "../../shared/tools/index.ts";
import { ensureTaskStream } from "../../shared/worker/index.ts";
import { createAdmission } from "./admission.ts";
import { createCancelSignals, startCancelListener } from "./cancels.ts";
import { createDeadlineTimers } from "./deadlines.ts";
import { createJobWriter } from "./job-writer.ts";
import { type KindRuntime, kindRuntime } from "./kinds/index.ts";
import { withRunSpans } from "./kinds/traced.ts";
import { createSlots } from "./slots.ts";
import { createTaskBuilder, type ToolSetReader } from "./task.ts";

export interface ExecutorServiceDeps {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly layout: EventLayout;
  readonly config: Config;
  readonly routes: RouteTable;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** Jobs this process runs at once over all routes (builtins and HTTP POSTs together). */
  readonly concurrency: number;
  readonly metrics?: HubMetrics;
  /** Spans for dispatch and each executor attempt (docs/operations.md, "Traces"). */
  readonly tracing?: Tracing;
}

export interface ExecutorService {
  stop(): Promise<void>;
}

/** The task stream's duplicate window: as long as the longest deadline, within 2 min … 1 h. */
function taskDuplicateWindowMs(routes: readonly RouteConfig[]): number {
  const longest = Math.max(0, ...routes.map((r) => parseDuration(r.deadline)));
  return Math.min(Math.max(longest, 2 * 60_000), 60 * 60_000);
}

/** Lazily opens the tool-set store, so routes without tool sets never touch its bucket. */
function lazyToolSets(nc: NatsConnection): ToolSetReader {
  let store: ReturnType<typeof openToolSetStore> | undefined;
  return {
    async getToolSet(name) {
      store ??= openToolSetStore(nc);
      return (await store).getToolSet(name);
    },
  };
}

/**
 * Starts the executor service: the task and timer streams, the runtime of every executor kind the
 * routes use, the deadline timers, and the admission consumer on run.requested.
 */
export async function startExecutorService(deps: ExecutorServiceDeps): Promise<ExecutorService> {
  const { config, logger } = deps;
  await ensureTaskStream(deps.jsm, {
    replicas: config.nats.replicas,
    duplicateWindowMs: taskDuplicateWindowMs(config.routes),
  });
  await ensureScheduleStreams(deps.jsm, { replicas: config.nats.replicas });
  const writer = createJobWriter({
    js: deps.js,
    jsm: deps.jsm,
    layout: deps.layout,
    clock: deps.clock,
    ids: deps.ids,
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
  });
  const deadlines = createDeadlineTimers({
    nc: deps.nc,
    js: deps.js,
    jsm: deps.jsm,
    layout: deps.layout,
    writer,
    logger: logger.child({ component: "deadlines" }),
    clock: deps.clock,
    deadlinesMs: [...new Set(config.routes.map((r) => parseDuration(r.deadline)))],
  });
  const slots = createSlots(deps.concurrency);
  const cancels = createCancelSignals();
  const kinds = new Map<string, KindRuntime>();
  const used = new Set(config.routes.map((r) => r.executor.kind));
  for (const kind of used) {
    const found = kindRuntime(kind);
    if (found === undefined) throw new Error(`no runtime for executor kind ${kind}`);
    const runtime = await found.start({
      nc: deps.nc,
      js: deps.js,
      jsm: deps.jsm,
      layout: deps.layout,
      routes: config.routes,
      writer,
      deadlines,
      tasks: createTaskBuilder(lazyToolSets(deps.nc)),
      slots,
      logger: logger.child({ kind }),
      clock: deps.clock,
      ids: deps.ids,
      replicas: config.nats.replicas,
      ...(deps.metrics ? { metrics: deps.metrics } : {}),
      cancels,
      ...(deps.tracing ? { tracing: deps.tracing } : {}),
    });
    kinds.set(kind, withRunSpans(found, runtime, deps.tracing));
  }
  const admission = createAdmission({
    nc: deps.nc,
    js: deps.js,
    jsm: deps.jsm,
    layout: deps.layout,
    routes: deps.routes,
    kinds,
    writer,
    slots,
    logger,
    clock: deps.clock,
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
  });
  await deadlines.start();
  const cancelListener = await startCancelListener({
    nc: deps.nc,
    js: deps.js,
    jsm: deps.jsm,
    layout: deps.layout,
    routes: deps.routes,
    signals: cancels,
    logger: logger.child({ component: "cancels" }),
    clock: deps.clock,
    replicas: config.nats.replicas,
  });
  await admission.start();
  logger.info({ kinds: [...kinds.keys()] }, "executor service started");
  return {
    async stop() {
      // Together: the kinds' grace period (HTTP attempts cut short after it) also bounds the
      // admission's wait for the attempts it started.
      await Promise.all([admission.stop(), ...[...kinds.values()].map((k) => k.stop())]);
      await deadlines.stop();
      await cancelListener.stop();
    },
  };
}
