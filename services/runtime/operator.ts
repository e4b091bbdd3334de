import type { Clock } from "../../shared/clock/index.ts";
import type { Config, OperatorConfig, OperatorDirectory } from "../../shared/config/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import type { IdGenerator } from "../../shared/ids/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import type { IndexStore } from "../../shared/search/index.ts";
import { createOperatorSurface } from "../admin-api/index.ts";
import { createAuthenticator, type IngressEdge, type MountedSurface } from "../ingress/index.ts";

export interface OperatorMountDeps {
  readonly hub: HubConnection;
  readonly config: Config;
  readonly operators: OperatorDirectory;
  readonly index?: IndexStore;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly logger: Logger;
}

/**
 * Operators authenticate like clients (hashed tokens or JWTs), against their own list; they sign
 * no callbacks, so the client shape gets none.
 */
const asClients = (operators: readonly OperatorConfig[]) =>
  operators.map((o) => ({ ...o, callback_secrets: [] })) as unknown as Config["clients"];

/**
 * The operator API and console (services/admin-api), served on the ingress's server with operator
 * credentials only; they share its failed-authentication limiter and its job reader.
 */
export function operatorMount(deps: OperatorMountDeps) {
  return async (edge: IngressEdge): Promise<MountedSurface> => {
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
    return {
      paths: surface.paths,
      handle: surface.handle,
      reloadCredentials: () => credentials.update(asClients(deps.operators.entries())),
    };
  };
}
