import type { ClientDirectory, ClientEntry, Config } from "../../shared/config/index.ts";
import type { Logger } from "../../shared/log/index.ts";

/** What a reload changed, and what it could not change without a restart. */
export interface ReloadOutcome {
  /** Client ids added, changed or removed. */
  readonly clientsChanged: readonly string[];
  /** Top-level keys (and client keys) that differ but apply only after a restart. */
  readonly needsRestart: readonly string[];
}

export interface ReloadDeps {
  /** The configuration the process started with: every section but clients stays as it is. */
  readonly running: Config;
  readonly clients: ClientDirectory;
  /** Rebuilds authentication after the directory changed (the ingress, when it runs here). */
  readonly afterClients?: () => Promise<void>;
  readonly logger: Logger;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Ids of clients whose entries differ between the two lists. */
function changedClients(before: readonly ClientEntry[], after: readonly ClientEntry[]): string[] {
  const old = new Map(before.map((c) => [c.id, c]));
  const now = new Map(after.map((c) => [c.id, c]));
  const ids = new Set([...old.keys(), ...now.keys()]);
  return [...ids].filter((id) => !same(old.get(id), now.get(id))).sort();
}

/**
 * Applies a reloaded configuration to a running process. Clients (token hashes, callback secrets,
 * JWT settings, routes and rate limits) take effect at once; that is what rotation needs. Every
 * other section is compared and named when it differs: those apply after a restart.
 */
export interface Reloader {
  reload(next: Config): Promise<ReloadOutcome>;
}

export function createReloader(deps: ReloadDeps): Reloader {
  const current = deps.running;
  return {
    async reload(next) {
      const needsRestart = Object.keys({ ...current, ...next })
        .filter((key) => key !== "clients")
        .filter((key) => !same(current[key as keyof Config], next[key as keyof Config]));
      const schedules = (c: readonly ClientEntry[]) =>
        c.map((client) => [client.id, client.callback_retry_schedule]);
      if (!same(schedules(current.clients), schedules(next.clients))) {
        needsRestart.push("clients[].callback_retry_schedule");
      }
      const clientsChanged = changedClients(deps.clients.entries(), next.clients);
      deps.clients.replace(next.clients);
      await deps.afterClients?.();
      deps.logger.info(
        { clients_changed: clientsChanged, needs_restart: needsRestart },
        "configuration reloaded",
      );
      if (needsRestart.length > 0) {
        deps.logger.warn(
          { keys: needsRestart },
          "these settings changed and apply after a restart",
        );
      }
      return { clientsChanged, needsRestart };
    },
  };
}
