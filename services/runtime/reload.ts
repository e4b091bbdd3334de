import type {
  ClientDirectory,
  ClientEntry,
  Config,
  OperatorDirectory,
} from "../../shared/config/index.ts";
import type { Logger } from "../../shared/log/index.ts";

/** What a reload changed, and what it could not change without a restart. */
export interface ReloadOutcome {
  /** Client ids added, changed or removed. */
  readonly clientsChanged: readonly string[];
  /** Operator ids added, changed or removed. */
  readonly operatorsChanged: readonly string[];
  /** Top-level keys (and client keys) that differ but apply only after a restart. */
  readonly needsRestart: readonly string[];
}

export interface ReloadDeps {
  /** The configuration the process started with: every section but clients and operators stays. */
  readonly running: Config;
  readonly clients: ClientDirectory;
  readonly operators: OperatorDirectory;
  /** Rebuilds authentication after the directories changed (the ingress, when it runs here). */
  readonly afterCredentials?: () => Promise<void>;
  readonly logger: Logger;
}

/** Sections a reload applies at once; every other top-level key waits for a restart. */
const RELOADED: ReadonlySet<string> = new Set(["clients", "operators"]);

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Ids of entries that differ between the two lists (added, changed or removed). */
function changedIds(
  before: readonly { readonly id: string }[],
  after: readonly { readonly id: string }[],
): string[] {
  const old = new Map(before.map((c) => [c.id, c]));
  const now = new Map(after.map((c) => [c.id, c]));
  const ids = new Set([...old.keys(), ...now.keys()]);
  return [...ids].filter((id) => !same(old.get(id), now.get(id))).sort();
}

/**
 * Applies a reloaded configuration to a running process. Clients (token hashes, callback secrets,
 * JWT settings, routes and rate limits) and operators (credentials, roles) take effect at once;
 * that is what rotation needs. Every other section is compared and named when it differs: those
 * apply after a restart.
 */
export interface Reloader {
  reload(next: Config): Promise<ReloadOutcome>;
}

export function createReloader(deps: ReloadDeps): Reloader {
  const current = deps.running;
  return {
    async reload(next) {
      const needsRestart = Object.keys({ ...current, ...next })
        .filter((key) => !RELOADED.has(key))
        .filter((key) => !same(current[key as keyof Config], next[key as keyof Config]));
      const schedules = (c: readonly ClientEntry[]) =>
        c.map((client) => [client.id, client.callback_retry_schedule]);
      if (!same(schedules(current.clients), schedules(next.clients))) {
        needsRestart.push("clients[].callback_retry_schedule");
      }
      const clientsChanged = changedIds(deps.clients.entries(), next.clients);
      const operatorsChanged = changedIds(deps.operators.entries(), next.operators);
      deps.clients.replace(next.clients);
      deps.operators.replace(next.operators);
      await deps.afterCredentials?.();
      deps.logger.info(
        {
          clients_changed: clientsChanged,
          operators_changed: operatorsChanged,
          needs_restart: needsRestart,
        },
        "configuration reloaded",
      );
      if (needsRestart.length > 0) {
        deps.logger.warn(
          { keys: needsRestart },
          "these settings changed and apply after a restart",
        );
      }
      return { clientsChanged, operatorsChanged, needsRestart };
    },
  };
}
