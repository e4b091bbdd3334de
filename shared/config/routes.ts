import { activeClient, type ClientDirectory } from "./clients.ts";
import type { ClientConfig, Config, RouteConfig } from "./schema.ts";

/** True when a client's route rules (exact keys, `prefix.*`, or `*`) admit the route key. */
export function routeAllowed(rules: readonly string[], route: string): boolean {
  for (const rule of rules) {
    if (rule === "*" || rule === route) return true;
    if (rule.endsWith(".*") && route.startsWith(rule.slice(0, -1))) return true;
  }
  return false;
}

/** Route and client lookups built once from the config. */
export interface RouteTable {
  route(key: string): RouteConfig | undefined;
  /** The client with the credentials active now (retired token hashes and secrets left out). */
  client(id: string): ClientConfig | undefined;
}

/**
 * Indexes the config's routes by key. Clients come from `directory` when given (it follows
 * reloads), else from the config as loaded.
 */
export function createRouteTable(config: Config, directory?: ClientDirectory): RouteTable {
  const routes = new Map(config.routes.map((r) => [r.key, r]));
  const clients = new Map(config.clients.map((c) => [c.id, c]));
  const client =
    directory?.client ??
    ((id: string) => {
      const entry = clients.get(id);
      return entry ? activeClient(entry, Date.now()) : undefined;
    });
  return { route: (key) => routes.get(key), client };
}
