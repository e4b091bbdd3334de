import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Clock } from "../../shared/clock/index.ts";
import {
  type Config,
  parseDuration,
  type RouteConfig,
  type RouteTable,
} from "../../shared/config/index.ts";
import { openDispatchIndex } from "../../shared/dispatch/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import { openToolSetStore } from "../../shared/tools/index.ts";
import { ensureRouteConsumer, ensureTaskStream } from "../../shared/worker/index.ts";
import { createExecutor, type ToolSetReader } from "./executor.ts";
import { createHttpDispatcher, type HttpDispatcher } from "./http-dispatcher.ts";
import { createSlots } from "./slots.ts";
import { createWatchdog } from "./watchdog.ts";

export interface ExecutorServiceDeps {
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly jsm: JetStreamManager;
  readonly config: Config;
  readonly routes: RouteTable;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** Jobs this process runs at once over all routes (builtins and HTTP POSTs together). */
  readonly concurrency: number;
  readonly metrics?: HubMetrics;
  /** Longest wait of the deadline watchdog between two looks at one open job. */
  readonly watchdogRecheckMs?: number;
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
 * Starts the executor service: the task stream and one work-queue consumer per HTTP/NATS route
 * (max_ack_pending = the route's `concurrency`), the admission consumer on run.requested, one
 * HTTP dispatcher per HTTP route, and the deadline watchdog.
 */
export async function startExecutorService(deps: ExecutorServiceDeps): Promise<ExecutorService> {
  const { config, logger } = deps;
  await ensureTaskStream(deps.jsm, {
    replicas: config.nats.replicas,
    duplicateWindowMs: taskDuplicateWindowMs(config.routes),
  });
  for (const route of config.routes) {
    if (route.executor.kind === "builtin") continue;
    await ensureRouteConsumer(deps.jsm, {
      route: route.key,
      maxAckPending: route.concurrency,
      ackWaitMs:
        // HTTP: the dispatcher sends working() every 3 s during a POST; 10 s brings a crashed
        // replica's tasks back soon.
        route.executor.kind === "nats" ? parseDuration(route.executor.ack_wait) : 10_000,
      maxDeliver: route.executor.kind === "nats" ? route.executor.max_deliver : -1,
    });
  }
  const index = await openDispatchIndex(deps.nc, {
    replicas: config.nats.replicas,
    ttlMs: parseDuration(config.nats.events_max_age),
  });
  const slots = createSlots(deps.concurrency);
  const base = { js: deps.js, jsm: deps.jsm, clock: deps.clock, ids: deps.ids };
  const metrics = deps.metrics ? { metrics: deps.metrics } : {};
  const executor = createExecutor({
    ...base,
    ...metrics,
    routes: deps.routes,
    logger,
    concurrency: deps.concurrency,
    slots,
    toolSets: lazyToolSets(deps.nc),
  });
  const dispatchers: HttpDispatcher[] = [];
  for (const route of config.routes) {
    const executorConfig = route.executor;
    if (executorConfig.kind !== "http" || !route.enabled) continue;
    dispatchers.push(
      createHttpDispatcher({
        ...base,
        ...metrics,
        route: { ...route, executor: executorConfig },
        index,
        slots,
        logger: logger.child({ route: route.key }),
      }),
    );
  }
  const watchdog = createWatchdog({
    ...base,
    ...metrics,
    routes: deps.routes,
    logger: logger.child({ component: "watchdog" }),
    ...(deps.watchdogRecheckMs === undefined ? {} : { recheckMs: deps.watchdogRecheckMs }),
  });
  await executor.start();
  for (const d of dispatchers) await d.start();
  await watchdog.start();
  logger.info({ http_routes: dispatchers.length }, "executor service started");
  return {
    async stop() {
      await executor.stop();
      await Promise.all(dispatchers.map((d) => d.stop()));
      await watchdog.stop();
    },
  };
}
