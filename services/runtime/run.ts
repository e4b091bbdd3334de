import { hostname } from "node:os";
import { STORE_VERSION, StoreOutdatedError } from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import { type Config, createRouteTable, parseDuration } from "../../shared/config/index.ts";
import { connectHub, type HubConnection } from "../../shared/hub/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import { createLease, openLeaseBucket } from "../../shared/lease/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { createMetrics, type HubMetrics } from "../../shared/metrics/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import { callbackSettings, createCallbackService } from "../callback/index.ts";
import { startExecutorService } from "../executor/index.ts";
import { type RunningIngress, startIngress } from "../ingress/index.ts";
import { createProjector } from "../projector/index.ts";
import { startAdminServer } from "./admin.ts";
import { startAuditCheckpoints } from "./audit.ts";
import { startConsumerStats } from "./consumer-stats.ts";
import { startSearchIndex } from "./search-index.ts";

export const SERVICE_NAMES = ["ingress", "projector", "executor", "callback"] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

export interface RunDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** Defaults to a fresh registry; /metrics exposes it. */
  readonly metrics?: HubMetrics;
  /** Spans of every service (shared/telemetry); the caller owns it and shuts it down. */
  readonly tracing?: Tracing;
}

export interface RunningHub {
  readonly hub: HubConnection;
  readonly metrics: HubMetrics;
  readonly ingress?: RunningIngress;
  /** Graceful stop: intake first, then in-flight work, then the NATS connection. */
  stop(): Promise<void>;
}

interface Stoppable {
  readonly name: string;
  stop(): Promise<void>;
}

/**
 * Starts the named services in this process over one NATS connection. `switchyard up` starts all
 * four; Kubernetes runs one per pod with `switchyard serve <name>`.
 */
export async function startServices(
  services: readonly ServiceName[],
  deps: RunDeps,
): Promise<RunningHub> {
  const { config, logger } = deps;
  const hub = await connectHub(config, logger, services.join("+"));
  if (hub.storeVersion < STORE_VERSION) {
    await hub.drain();
    throw new StoreOutdatedError(hub.storeVersion);
  }
  const metrics = deps.metrics ?? createMetrics();
  for (const service of services) metrics.serviceInfo.set({ service }, 1);
  const tracing = deps.tracing ? { tracing: deps.tracing } : {};
  const stoppables: Stoppable[] = [];
  let ingress: RunningIngress | undefined;
  let draining = false;
  const ready = async () => !draining && (await hub.topologyReady());
  // The search index: opened where it is read (ingress) or written (projector), issue 16.
  const search = await startSearchIndex({ services, hub, config, logger });

  if (services.includes("ingress")) {
    ingress = await startIngress({
      hub,
      ...deps,
      metrics,
      logger: logger.child({ component: "ingress" }),
      ...search.ingress,
    });
    stoppables.push({ name: "ingress", stop: ingress.stop });
  } else {
    const admin = startAdminServer({
      host: config.admin.host,
      port: config.admin.port,
      ready,
      metrics: metrics.expose,
      logger,
    });
    stoppables.push({ name: "admin", stop: admin.stop });
  }
  if (services.includes("executor")) {
    const executor = await startExecutorService({
      nc: hub.nc,
      js: hub.js,
      jsm: hub.jsm,
      config,
      routes: createRouteTable(config),
      logger: logger.child({ component: "executor" }),
      clock: deps.clock,
      ids: deps.ids,
      concurrency: 64,
      metrics,
      ...tracing,
    });
    stoppables.push({ name: "executor", stop: executor.stop });
  }
  if (services.includes("projector")) {
    const projectorLogger = logger.child({ component: "projector" });
    const projector = createProjector({
      js: hub.js,
      jsm: hub.jsm,
      kv: hub.jobs,
      logger: projectorLogger,
      lingerMs: parseDuration(config.projector.linger),
      // Several projector replicas may run: one folds, the others stand by.
      lease: createLease({
        kv: await openLeaseBucket(hub.nc, { replicas: config.nats.replicas }),
        key: "projector",
        holder: `${hostname()}/${process.pid}`,
        logger: projectorLogger,
      }),
      metrics,
      ...tracing,
    });
    await projector.start();
    stoppables.push({ name: "projector", stop: projector.stop });
    await search.startIndexer(stoppables);
    const checkpoints = await startAuditCheckpoints({ hub, config, clock: deps.clock, logger });
    if (checkpoints) stoppables.push({ name: "audit checkpoints", stop: checkpoints.stop });
  }
  if (services.includes("callback")) {
    const routes = createRouteTable(config);
    const callback = createCallbackService({
      js: hub.js,
      jsm: hub.jsm,
      settings: callbackSettings(config),
      replicas: config.nats.replicas,
      client: routes.client,
      logger: logger.child({ component: "callback" }),
      clock: deps.clock,
      ids: deps.ids,
      metrics,
      ...tracing,
    });
    await callback.start();
    stoppables.push({ name: "callback", stop: callback.stop });
  }
  const stats = startConsumerStats({ jsm: hub.jsm, metrics, logger, intervalMs: 15_000 });
  stoppables.push({ name: "consumer stats", stop: stats.stop });
  stoppables.push({ name: "search index", stop: search.close });
  return {
    hub,
    metrics,
    ...(ingress ? { ingress } : {}),
    async stop() {
      draining = true;
      for (const s of stoppables) {
        await s
          .stop()
          .catch((err: unknown) => logger.error({ service: s.name, err }, "stop failed"));
      }
      await hub.drain();
      // The spans of the work just finished, before the caller exits.
      await deps.tracing?.flush().catch(() => {});
    },
  };
}
