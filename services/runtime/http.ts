import { type AnyElysia, Elysia } from "elysia";
import type { Clock } from "../../shared/clock/index.ts";
import type { ClientDirectory, Config, OperatorDirectory } from "../../shared/config/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { HubMetrics } from "../../shared/metrics/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import type { Tracing } from "../../shared/telemetry/index.ts";
import { createIngress, type RunningIngress } from "../ingress/index.ts";
import { operatorPlugin } from "./operator.ts";

export interface HttpServerDeps {
  readonly hub: HubConnection;
  readonly config: Config;
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly metrics: HubMetrics;
  readonly clients: ClientDirectory;
  readonly operators: OperatorDirectory;
  readonly index?: IndexStore;
  readonly tracing?: Tracing;
}

/**
 * The hub's HTTP server (server.host/port): the Client API's plugins and the operator API, one
 * app. The ingress's edge plugin goes first, so its request checks run before the operator API
 * answers and its error answer covers every Client API route.
 */
export async function startHttpServer(deps: HttpServerDeps): Promise<RunningIngress> {
  const { logger } = deps;
  const ingress = await createIngress({
    hub: deps.hub,
    config: deps.config,
    logger: logger.child({ component: "ingress" }),
    clock: deps.clock,
    ids: deps.ids,
    metrics: deps.metrics,
    clients: deps.clients,
    ...(deps.index ? { index: deps.index } : {}),
    ...(deps.tracing ? { tracing: deps.tracing } : {}),
  });
  const operator = await operatorPlugin({
    hub: deps.hub,
    config: deps.config,
    operators: deps.operators,
    ...(deps.index ? { index: deps.index } : {}),
    clock: deps.clock,
    ids: deps.ids,
    logger: logger.child({ component: "ingress" }),
    edge: ingress.edge,
  });
  let app: AnyElysia = new Elysia({ normalize: false })
    .use(ingress.plugins.edge)
    .use(operator.plugin);
  for (const routes of ingress.plugins.routes) app = app.use(routes);
  const running = ingress.listen(app);
  return {
    ...running,
    async reloadCredentials() {
      await running.reloadCredentials();
      await operator.reloadCredentials();
    },
  };
}
