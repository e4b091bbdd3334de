import type { Clock } from "../../shared/clock/index.ts";
import {
  type Config,
  createOperatorDirectory,
  createRouteTable,
  type OperatorDirectory,
  parseDuration,
} from "../../shared/config/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import type { IdGenerator, JobIdDeriver } from "../../shared/ids/index.ts";
import { type JobRef, readCreatedMs } from "../../shared/jobs/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { type IndexStore, withRequestIdLookup } from "../../shared/search/index.ts";
import { ADMIN_PREFIX, operatorSurface } from "./app.ts";
import {
  type CredentialCheck,
  createOperatorAuth,
  type FailureLimiter,
  loadSessionKey,
  metaSessionGenerations,
} from "./auth.ts";

export { ADMIN_PREFIX, createAdminApp, SECURITY_HEADERS } from "./app.ts";

export interface OperatorSurfaceDeps {
  readonly hub: HubConnection;
  readonly config: Config;
  readonly store?: IndexStore;
  /** Checks operator bearer credentials (the ingress's authenticator over `operators`). */
  readonly credentials: CredentialCheck;
  /** The operators as reloaded; default: config.operators, fixed. */
  readonly operators?: OperatorDirectory;
  readonly limiter?: FailureLimiter;
  readonly addressOf: (request: Request) => string;
  readonly deriveJobId: JobIdDeriver;
  readonly clock: Clock;
  readonly ids: IdGenerator;
  readonly logger: Logger;
  /** Read-your-writes for cancels made here (the ingress's job reader). */
  readonly appended?: (ref: JobRef, seq: number) => void;
}

/**
 * The operator API and console as the runtime mounts them on the ingress's server
 * (services/runtime/operator.ts).
 */
export async function createOperatorSurface(deps: OperatorSurfaceDeps) {
  const { hub, config } = deps;
  const auth = createOperatorAuth({
    operators: deps.operators ?? createOperatorDirectory(config.operators),
    credentials: deps.credentials,
    ...(deps.limiter ? { limiter: deps.limiter } : {}),
    sessionKey: await loadSessionKey(hub.meta),
    sessionTtlMs: parseDuration(config.console.session_ttl),
    generations: metaSessionGenerations(hub.meta, hub.connected),
    // The cookie goes where the console page and its API calls go, not to the Client API.
    cookiePaths: [config.console.path, ADMIN_PREFIX],
    secureCookie: config.console.secure_cookie,
    now: () => deps.clock.now().getTime(),
  });
  return operatorSurface({
    nc: hub.nc,
    js: hub.js,
    jsm: hub.jsm,
    layout: hub.layout,
    natsConnected: hub.connected,
    config,
    routes: createRouteTable(config),
    ...(deps.store
      ? {
          store: withRequestIdLookup(deps.store, {
            deriveJobId: deps.deriveJobId,
            createdMsOf: (job) =>
              readCreatedMs(hub, { client_id: job.clientId, job_id: job.jobId }),
            streamReachable: hub.connected,
          }),
        }
      : {}),
    auth,
    clock: deps.clock,
    ids: deps.ids,
    deriveJobId: deps.deriveJobId,
    logger: deps.logger,
    addressOf: deps.addressOf,
    ...(deps.appended ? { appended: deps.appended } : {}),
  });
}
