import { type FSWatcher, statSync, unwatchFile, watch, watchFile } from "node:fs";
import { dirname } from "node:path";
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
  /**
   * How often the files' metadata is compared besides the directory watches: the backstop for a
   * file system whose changes inotify does not see (a network file system), and for a directory
   * that cannot be watched.
   */
  readonly backstopMs?: number;
}

/** The backstop poll's period: a change that no directory watch saw is picked up within it. */
export const CONFIG_BACKSTOP_MS = 60_000;

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

const sameStamp = (a: FileStamp | null, b: FileStamp | null) =>
  a === b || (a !== null && b !== null && a.mtimeMs === b.mtimeMs && a.ino === b.ino);

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
 * config file or a secret file it references changes. Each file's directory is watched (inotify),
 * not the file: an editor's save and the symlink swap Kubernetes uses to update a mounted
 * ConfigMap or Secret (`..data` renamed over) are both entries of the directory changing, and an
 * event costs one stat of the files there. An idle process so wakes for nothing, where polling
 * stat every 2 s costs each process about 0.0005 cores on a slow VM, a sixth of an idle hub's CPU
 * (`bun bench/config-watch.ts`). A slow stat poll stays as the backstop for a file system whose
 * changes inotify does not see. An invalid file changes nothing: the running configuration stays,
 * and every problem is logged with its key.
 *
 * The watch starts once the services run, which can be many seconds after the files were read
 * (waiting for NATS, say). `stamps` are the files as they were read: one that differs now is
 * reloaded at once, so a change made during start-up is not left for the next change or SIGHUP.
 */
export function watchConfig(
  deps: ConfigWatchDeps,
  stamps: ReadonlyMap<string, FileStamp | null>,
): ConfigWatch {
  const backstopMs = deps.backstopMs ?? CONFIG_BACKSTOP_MS;
  /** Each followed file as last compared (null: missing). */
  const seen = new Map<string, FileStamp | null>();
  /** A watch per directory of a followed file, and the followed files in it. */
  const directories = new Map<string, { watcher: FSWatcher | undefined; paths: Set<string> }>();
  let chain: Promise<void> = Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;

  /** Compares a file with what was last seen; a change reloads once the writes settle. */
  const compare = (path: string) => {
    const now = stampOf(path);
    if (sameStamp(now, seen.get(path) ?? null)) return;
    seen.set(path, now);
    // Editors and kubelet write in several steps; settle before reading.
    clearTimeout(timer);
    timer = setTimeout(() => void reload(`${path} changed`), 300);
  };

  const watchDirectory = (dir: string): FSWatcher | undefined => {
    try {
      const watcher = watch(dir, { persistent: false }, () => {
        for (const path of directories.get(dir)?.paths ?? []) compare(path);
      });
      watcher.on("error", (err: Error) => {
        deps.logger.warn({ dir, err: err.message }, "config directory watch ended; polling");
      });
      return watcher;
    } catch (err) {
      // A directory that does not exist (yet) or cannot be watched: the backstop poll covers it.
      deps.logger.warn({ dir, err: (err as Error).message }, "cannot watch config directory");
      return undefined;
    }
  };

  const follow = (paths: readonly string[]) => {
    for (const path of [deps.path, ...paths]) {
      if (seen.has(path)) continue;
      seen.set(path, stampOf(path));
      const dir = dirname(path);
      const entry = directories.get(dir);
      if (entry) entry.paths.add(path);
      else directories.set(dir, { watcher: watchDirectory(dir), paths: new Set([path]) });
      watchFile(path, { interval: backstopMs, persistent: false }, () => compare(path));
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

  const changed = [...stamps].find(([path, stamp]) => !sameStamp(stamp, stampOf(path)));
  follow([...stamps.keys()]);
  if (changed) void reload(`${changed[0]} changed during start-up`);
  return {
    reload,
    stop() {
      clearTimeout(timer);
      for (const path of seen.keys()) unwatchFile(path);
      for (const { watcher } of directories.values()) watcher?.close();
      seen.clear();
      directories.clear();
    },
  };
}
