import { STORE_VERSION, StoreOutdatedError } from "../../shared/bus/index.ts";
import type { Clock } from "../../shared/clock/index.ts";
import {
  type ClientDirectory,
  type Config,
  createClientDirectory,
  createOperatorDirectory,
  createRouteTable,
  type OperatorDirectory,
  parseDuration,
} from "../../shared/config/index.ts";
import {
  asTopologyNotSetUp,
  type ConnectWait,
  connectHub,
  type HubConnection,
} from "../../shared/hub/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import { publishViewChanged } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { createMetrics, type HubMetrics } from "../../shared/metrics/index.ts";
import {
  type BacklogCollector,
  createProcessBacklogCollector,
  createRoundPacer,
  createSharedFeeds,
  type SharedFeeds,
} from "../../shared/projection/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import type { RunningIngress } from "../ingress/index.ts";
import { createConsumerStats } from "./consumer-stats.ts";
import { checkAnswerCaps } from "./limits.ts";
import { startMonitoringServer } from "./monitoring.ts";
import {
  openReadModelLeases,
  type ReadModelGroup,
  type ReadModelLeases,
} from "./read-model-leases.ts";
import { createReloader, type ReloadOutcome } from "./reload.ts";
import { startSearchIndex } from "./search-index.ts";

/**
 * Jobs one executor process runs at once (builtins and HTTP POSTs together; Bun's fetch runs 256
 * requests at once). Its pulls are sized to the free slots and a pull is renewed only once
 * filled, so the slots are also the executor's credit window: with 64, pulls of about 35 left a
 * mean of 16-51 run.requested undelivered in the stream while slots were free (docs/performance.md,
 * "Where a job waits"); 256 keeps a pull open through a burst.
 */
const EXECUTOR_SLOTS = 256;

export const SERVICE_NAMES = ["ingress", "projector", "indexer", "executor", "callback"] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

export interface RunDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  /** Defaults to a fresh registry; /metrics exposes it. */
  readonly metrics?: HubMetrics;
  /** The first NATS connection: a countdown while the server is unreachable. */
  readonly onNatsWaiting?: (wait: ConnectWait) => void;
  /** Spread the partition streams' leaders over the nodes at start (`switchyard setup`). */
  readonly placeLeaders?: boolean;
  /** Spans of every service (shared/telemetry); the caller owns it and shuts it down. */
  readonly tracing?: Tracing;
}

export interface RunningHub {
  readonly hub: HubConnection;
  readonly metrics: HubMetrics;
  readonly ingress?: RunningIngress;
  /** healthz, readyz and metrics (monitoring.host/port), in every process. */
  readonly monitoring: { readonly port: number; readonly url: string };
  /** Graceful stop: intake first, then in-flight work, then the NATS connection. */
  stop(): Promise<void>;
  /** Applies a reloaded configuration: clients and operators at once, the rest after a restart. */
  reload(next: Config): Promise<ReloadOutcome>;
}

interface Stoppable {
  readonly name: string;
  stop(): Promise<void>;
}

/**
 * Starts the named services in this process over one NATS connection. `switchyard up` starts all
 * five; Kubernetes runs one per pod with `switchyard serve <name>`.
 */
export async function startServices(
  services: readonly ServiceName[],
  deps: RunDeps,
): Promise<RunningHub> {
  const { config, logger } = deps;
  const hub = await connectHub(config, logger, services.join("+"), {
    ...(deps.onNatsWaiting ? { onWaiting: deps.onNatsWaiting } : {}),
    ...(deps.placeLeaders ? { placeLeaders: true } : {}),
  });
  if (hub.storeVersion < STORE_VERSION) {
    await hub.drain();
    throw new StoreOutdatedError(hub.storeVersion);
  }
  // Clients (credentials, callback secrets) follow reloads; retired entries drop out by date.
  const clients = createClientDirectory(config.clients);
  // Operators (credentials, roles) follow reloads the same way.
  const operators = createOperatorDirectory(config.operators);
  const metrics = deps.metrics ?? createMetrics();
  for (const service of services) metrics.serviceInfo.set({ service }, 1);
  const stoppables: Stoppable[] = [];
  let draining = false;
  let search: Awaited<ReturnType<typeof startSearchIndex>> | undefined;
  const ready = async () => !draining && (await hub.topologyReady());
  const stopAll = async () => {
    draining = true;
    for (const s of stoppables) {
      await s.stop().catch((err: unknown) => logger.error({ service: s.name, err }, "stop failed"));
    }
    // Closed after everything that reads or writes it (the ingress, the admin API, the indexer):
    // closed first, the indexer spent its stop retrying writes into a closed database.
    await search
      ?.close()
      .catch((err: unknown) => logger.error({ err }, "closing the index failed"));
    await hub.drain();
    // The spans of the work just finished, before the caller exits.
    await deps.tracing?.flush().catch(() => {});
  };
  let parts: Parts;
  try {
    // The search index: opened where it is read (ingress) or written (projector), issue 16.
    search = await startSearchIndex({ services, hub, config, logger });
    const tracing = deps.tracing ? { tracing: deps.tracing } : {};
    const ctx = { deps, hub, clients, operators, metrics, ready, stoppables, search, tracing };
    parts = await startParts(services, ctx);
  } catch (err) {
    // A refused start (a limit, a busy port) leaves nothing running behind.
    await stopAll();
    throw asTopologyNotSetUp(err) ?? err;
  }
  const { ingress, monitoring } = parts;
  const reloader = createReloader({
    running: config,
    clients,
    operators,
    ...(ingress ? { afterCredentials: ingress.reloadCredentials } : {}),
    logger,
  });
  return {
    hub,
    metrics,
    ...(ingress ? { ingress } : {}),
    monitoring: {
      port: monitoring.port,
      url: `http://${config.monitoring.host}:${monitoring.port}`,
    },
    reload: reloader.reload,
    stop: stopAll,
  };
}

interface Parts {
  readonly ingress?: RunningIngress;
  readonly monitoring: { readonly port: number };
}

interface PartsContext {
  readonly deps: RunDeps;
  readonly hub: HubConnection;
  readonly clients: ClientDirectory;
  readonly operators: OperatorDirectory;
  readonly metrics: HubMetrics;
  readonly ready: () => Promise<boolean>;
  /** Filled as parts start, so a failure can stop what already runs. */
  readonly stoppables: Stoppable[];
  /** The search index (issue 16): read by the ingress, written by the indexer. */
  readonly search: Awaited<ReturnType<typeof startSearchIndex>>;
  readonly tracing: { readonly tracing?: Tracing };
}

/** Starts the named services and the monitoring server, registering each as it runs. */
async function startParts(services: readonly ServiceName[], ctx: PartsContext): Promise<Parts> {
  const { deps, hub, clients, operators, metrics, stoppables, tracing } = ctx;
  const { config, logger } = deps;
  let ingress: RunningIngress | undefined;
  // Each service's modules load only where it runs: a `serve projector` process does not carry
  // the ingress's HTTP stack or the executor's tool compiler (about 25 MB of RSS each).
  if (services.includes("ingress")) {
    const { startHttpServer } = await import("./http.ts");
    ingress = await startHttpServer({
      hub,
      config,
      logger,
      clock: deps.clock,
      ids: deps.ids,
      metrics,
      clients,
      operators,
      ...ctx.search.ingress,
      ...tracing,
    });
    stoppables.push({ name: "ingress", stop: ingress.stop });
  }
  // One lease source per process for the read models it runs: at P > 1 their partition claims
  // share one member record.
  const groups = readModelGroups(services, config);
  const leases =
    groups.length > 0 ? await openReadModelLeases({ hub, config, groups, logger }) : undefined;
  // Metrics are never on the API port: they say too much about traffic to serve to callers.
  const stats = createConsumerStats({
    jsm: hub.jsm,
    layout: hub.layout,
    metrics,
    logger,
    eventsMaxBytes: config.nats.events_max_bytes,
  });
  const monitoring = startMonitoringServer({
    host: config.monitoring.host,
    port: config.monitoring.port,
    ready: ctx.ready,
    metrics: async () => {
      await stats.refresh();
      for (const group of groups) {
        metrics.partitionsHeld.set({ group }, leases?.held(group).length ?? 0);
      }
      return metrics.expose();
    },
    logger,
  });
  stoppables.push({ name: "monitoring", stop: monitoring.stop });
  if (services.includes("executor")) {
    checkAnswerCaps(config, hub.nc.info?.max_payload ?? Number.MAX_SAFE_INTEGER);
    const { startExecutorService } = await import("../executor/index.ts");
    const executor = await startExecutorService({
      nc: hub.nc,
      js: hub.js,
      jsm: hub.jsm,
      layout: hub.layout,
      config,
      routes: createRouteTable(config),
      logger: logger.child({ component: "executor" }),
      clock: deps.clock,
      ids: deps.ids,
      concurrency: EXECUTOR_SLOTS,
      metrics,
      ...tracing,
    });
    stoppables.push({ name: "executor", stop: executor.stop });
  }
  await startReadModels(ctx, { services, groups, leases });
  if (services.includes("callback")) {
    const { callbackSettings, createCallbackService } = await import("../callback/index.ts");
    const callback = createCallbackService({
      js: hub.js,
      jsm: hub.jsm,
      layout: hub.layout,
      nc: hub.nc,
      settings: callbackSettings(config),
      replicas: config.nats.replicas,
      client: createRouteTable(config, clients).client,
      logger: logger.child({ component: "callback" }),
      clock: deps.clock,
      ids: deps.ids,
      metrics,
      ...tracing,
    });
    await callback.start();
    stoppables.push({ name: "callback", stop: callback.stop });
  }
  return { ...(ingress ? { ingress } : {}), monitoring };
}

/** The read models this process runs, and the claims they share. */
async function startReadModels(
  ctx: PartsContext,
  read: {
    readonly services: readonly ServiceName[];
    readonly groups: readonly ReadModelGroup[];
    readonly leases: ReadModelLeases | undefined;
  },
): Promise<void> {
  const { services, groups, leases } = read;
  const { stoppables, metrics } = ctx;
  // Both read models here: each partition's index folds its projector's deliveries (one delivery
  // per event for both, shared/projection/shared-feed.ts). The indexer starts first, so it also
  // stops first (in order), writing what it holds while its projector still feeds it.
  const feeds =
    groups.includes("projector") && groups.includes("indexer") ? createSharedFeeds() : undefined;
  // One per process: a read model folding a backlog makes it collect (backlog-collector.ts).
  const backlog = createProcessBacklogCollector((tookMs) => {
    metrics.backlogCollections.inc();
    metrics.backlogCollectionSeconds.inc(tookMs / 1_000);
  });
  if (services.includes("indexer")) {
    await ctx.search.startIndexer({ stoppables, leases, feeds, backlog });
  }
  if (leases && groups.includes("projector")) await startProjector(ctx, { leases, feeds, backlog });
  // After the read models: each stops its slots first (writing what it holds, releasing each
  // claim), and the member record goes last.
  if (leases) stoppables.push({ name: "partition claims", stop: leases.stop });
}

async function startProjector(
  ctx: PartsContext,
  read: {
    readonly leases: ReadModelLeases;
    readonly feeds: SharedFeeds | undefined;
    readonly backlog: BacklogCollector;
  },
): Promise<void> {
  const { leases, feeds, backlog } = read;
  const { deps, hub, stoppables, metrics, tracing } = ctx;
  const { config, logger } = deps;
  const projectorLogger = logger.child({ component: "projector" });
  const { createProjector } = await import("../projector/index.ts");
  // One projector per partition, each on its own lease (at P > 1 a claim of the process's fair
  // share): several replicas may run, and each partition is folded by the replica holding it.
  // The partitions this process folds share one round pace (shared/projection/pacer.ts).
  const pacer = createRoundPacer();
  for (let partition = 0; partition < hub.layout.partitions; partition++) {
    const partitionLogger =
      hub.layout.partitions === 1 ? projectorLogger : projectorLogger.child({ partition });
    const projector = createProjector({
      nc: hub.nc,
      js: hub.js,
      jsm: hub.jsm,
      layout: hub.layout,
      partition,
      kv: hub.views(partition),
      logger: partitionLogger,
      lingerMs: parseDuration(config.projector.linger),
      settleWaitMs: parseDuration(config.projector.settle_wait),
      lease: leases.lease("projector", partition),
      pacer,
      backlog,
      ...(feeds ? { feeds } : {}),
      metrics,
      ...tracing,
      // Every ingress replica caches settled views: each one that changes is announced.
      settledViewChanged: (change) => publishViewChanged(hub.nc, change),
    });
    await projector.start();
    stoppables.push({ name: `projector p${partition}`, stop: projector.stop });
  }
  const { startAuditCheckpoints } = await import("./audit.ts");
  const checkpoints = await startAuditCheckpoints({ hub, config, clock: deps.clock, logger });
  if (checkpoints) stoppables.push({ name: "audit checkpoints", stop: checkpoints.stop });
}

/** The read models this process runs (the indexer only where the index is enabled). */
function readModelGroups(services: readonly ServiceName[], config: Config): ReadModelGroup[] {
  const groups: ReadModelGroup[] = [];
  if (services.includes("projector")) groups.push("projector");
  if (services.includes("indexer") && config.index.enabled) groups.push("indexer");
  return groups;
}
