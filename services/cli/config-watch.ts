import { type StatWatcher, statSync, unwatchFile, watchFile } from "node:fs";
import { type Config, ConfigError } from "../../shared/config/index.ts";
import type { Logger } from "../../shared/log/index.ts";

export interface ConfigWatchDeps {
  /** The config file. */
  readonly path: string;
  /** Loads the whole configuration again; reports the `${file:…}` files it read. */
  readonly load: (filesRead: (paths: readonly string[]) => void) => Promise<Config>;
  /** Applies a configuration that loaded without problems. */
  readonly apply: (config: Config) => Promise<unknown>;
  readonly logger: Logger;
  /** How often the files' metadata is compared (stat polling follows symlink swaps). */
  readonly intervalMs?: number;
}

/** What a file was when the configuration was read: compared again when the watch starts. */
export interface FileStamp {
  readonly mtimeMs: number;
  readonly ino: number;
}

/** The files as they are now (a missing one as null), taken right after the configuration loads. */
export function stampFiles(paths: readonly string[]): ReadonlyMap<string, FileStamp | null> {
  const stamps = new Map<string, FileStamp | null>();
  for (const path of paths) stamps.set(path, stampOf(path));
  return stamps;
}

function stampOf(path: string): FileStamp | null {
  try {
    const { mtimeMs, ino } = statSync(path);
    return { mtimeMs, ino };
  } catch {
    return null;
  }
}

export interface ConfigWatch {
  /** Loads and applies now (what SIGHUP does). Never throws: a bad file is logged and ignored. */
  reload(reason: string): Promise<void>;
  stop(): void;
}

/**
 * Reloads the configuration on SIGHUP (the caller wires the signal to `reload`) and when the
 * config file or a secret file it references changes. Polling stat instead of inotify follows the
 * symlink swaps Kubernetes uses to update mounted ConfigMaps and Secrets. An invalid file changes
 * nothing: the running configuration stays, and every problem is logged with its key.
 *
 * The watch starts once the services run, which can be many seconds after the files were read
 * (waiting for NATS, say). `stamps` are the files as they were read: one that differs now is
 * reloaded at once, so a change made during start-up is not left for the next change or SIGHUP.
 */
export function watchConfig(
  deps: ConfigWatchDeps,
  stamps: ReadonlyMap<string, FileStamp | null>,
): ConfigWatch {
  const interval = deps.intervalMs ?? 2_000;
  const watched = new Map<string, StatWatcher>();
  let chain: Promise<void> = Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;

  const follow = (paths: readonly string[]) => {
    for (const path of [deps.path, ...paths]) {
      if (watched.has(path)) continue;
      watched.set(
        path,
        watchFile(path, { interval, persistent: false }, (now, before) => {
          if (now.mtimeMs === before.mtimeMs && now.ino === before.ino) return;
          // Editors and kubelet write in several steps; settle before reading.
          clearTimeout(timer);
          timer = setTimeout(() => void reload(`${path} changed`), 300);
        }),
      );
    }
  };

  const reloadOnce = async (reason: string) => {
    deps.logger.info({ reason }, "reloading configuration");
    let next: Config;
    try {
      next = await deps.load(follow);
    } catch (err) {
      const issues = err instanceof ConfigError ? err.issues : undefined;
      deps.logger.error(
        { reason, issues, err: issues ? undefined : (err as Error).message },
        "reloaded configuration is invalid; the running one stays",
      );
      return;
    }
    await deps.apply(next);
  };

  const reload = (reason: string) => {
    chain = chain
      .then(() => reloadOnce(reason))
      .catch((err: unknown) => {
        deps.logger.error({ reason, err: (err as Error).message }, "reload failed");
      });
    return chain;
  };

  const sameStamp = (a: FileStamp | null, b: FileStamp | null) =>
    a === b || (a !== null && b !== null && a.mtimeMs === b.mtimeMs && a.ino === b.ino);
  const changed = [...stamps].find(([path, stamp]) => !sameStamp(stamp, stampOf(path)));
  follow([...stamps.keys()]);
  if (changed) void reload(`${changed[0]} changed during start-up`);
  return {
    reload,
    stop() {
      clearTimeout(timer);
      for (const path of watched.keys()) unwatchFile(path);
      watched.clear();
    },
  };
}
