import { Elysia } from "elysia";
import type { Clock } from "../../shared/clock/index.ts";
import type { Config, OperatorConfig, OperatorDirectory } from "../../shared/config/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import { createOperatorSurface } from "../admin-api/index.ts";
import { createAuthenticator, type IngressEdge } from "../ingress/index.ts";

export interface OperatorPluginDeps {
  readonly hub: HubConnection;
  readonly config: Config;
  readonly operators: OperatorDirectory;
  readonly index?: IndexStore;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly logger: Logger;
  /** What the ingress shares: its failed-authentication limiter, caller address and job reader. */
  readonly edge: IngressEdge;
}

/**
 * Operators authenticate like clients (hashed tokens or JWTs), against their own list; they sign
 * no callbacks, so the client shape gets none.
 */
const asClients = (operators: readonly OperatorConfig[]) =>
  operators.map((o) => ({ ...o, callback_secrets: [] })) as unknown as Config["clients"];

/**
 * The operator API and console (services/admin-api) as a plugin of the ingress's server, with
 * operator credentials only. They answer for their own paths (their own auth, roles and errors)
 * before routing; mounted after the ingress's edge checks, which hold for them too.
 */
export async function operatorPlugin(deps: OperatorPluginDeps) {
  const { edge } = deps;
  const credentials = await createAuthenticator(asClients(deps.operators.entries()));
  const surface = await createOperatorSurface({
    hub: deps.hub,
    config: deps.config,
    ...(deps.index ? { store: deps.index } : {}),
    credentials,
    operators: deps.operators,
    limiter: edge.authFailures,
    addressOf: edge.addressOf,
    deriveJobId: edge.deriveJobId,
    clock: deps.clock,
    ids: deps.ids,
    logger: deps.logger.child({ component: "operator-api" }),
    appended: edge.appended,
  });
  const served = (path: string) =>
    surface.paths.some((p) => path === p || path.startsWith(`${p}/`));
  // A request hook runs before routing, for the whole server the plugin is mounted on.
  const plugin = new Elysia({ name: "operator-surface", normalize: false }).onRequest(
    ({ request }) => {
      const path = new URL(request.url).pathname;
      return served(path) ? surface.handle(request) : undefined;
    },
  );
  return {
    plugin,
    reloadCredentials: () => credentials.update(asClients(deps.operators.entries())),
  };
}
