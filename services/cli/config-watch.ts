import { type FSWatcher, statSync, watch } from "node:fs";
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
   * How often the files are compared besides their watches, and a watch that could not be set is
   * tried again: the backstop for a file system whose changes inotify does not see (a network file
   * system), and for a file missing when it was to be watched.
   */
  readonly backstopMs?: number;
}

/** The backstop's period: a change that no watch saw is picked up within it. */
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
 * config file or a secret file it references changes. Each file is watched (inotify, through its
 * symlinks to the file they reach), so an idle process wakes for nothing, and neither does a busy
 * one for other files of the directory (the search index's SQLite files sit beside the config in
 * some layouts). An edit in place is a change of the file; an editor's save (a new file renamed
 * over it) and the symlink swap Kubernetes uses to update a mounted ConfigMap or Secret (`..data`
 * renamed over, then the old files removed) end the watched file: the watch is set again on what
 * the path reaches now. Every `backstopMs` the files are compared too, and a watch that could not
 * be set (a missing file) is tried again: the backstop for a file system whose changes inotify
 * does not see. Polling stat every 2 s instead costs each process about 0.0004 cores on a slow VM,
 * an eighth of an idle hub's CPU (`bun bench/config-watch.ts`). An invalid file changes nothing:
 * the running configuration stays, and every problem is logged with its key.
 *
 * The watch starts once the services run, which can be many seconds after the files were read
 * (waiting for NATS, say). `stamps` are the files as they were read: one that differs now is
 * reloaded at once, so a change made during start-up is not left for the next change or SIGHUP.
 */
export function watchConfig(
  deps: ConfigWatchDeps,
  stamps: ReadonlyMap<string, FileStamp | null>,
): ConfigWatch {
  let chain: Promise<void> = Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;

  const files = watchFiles({
    backstopMs: deps.backstopMs ?? CONFIG_BACKSTOP_MS,
    changed: (path) => {
      // Editors and kubelet write in several steps; settle before reading.
      clearTimeout(timer);
      timer = setTimeout(() => void reload(`${path} changed`), 300);
    },
  });
  const follow = (paths: readonly string[]) => files.follow([deps.path, ...paths]);

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
      files.stop();
    },
  };
}

/**
 * Watches files (inotify, through their symlinks) and calls `changed` with a file's path when its
 * stamp differs from the last one seen. A watch whose file was replaced or removed (a `rename`
 * event) is set again on what the path reaches now; every `backstopMs` each file is compared and
 * a watch that could not be set is tried again.
 */
function watchFiles(options: {
  readonly backstopMs: number;
  readonly changed: (path: string) => void;
}) {
  /** Each followed file as last compared (null: missing). */
  const seen = new Map<string, FileStamp | null>();
  /** The watch of each followed file that has one now. */
  const watchers = new Map<string, FSWatcher>();

  const compare = (path: string) => {
    const now = stampOf(path);
    if (sameStamp(now, seen.get(path) ?? null)) return;
    seen.set(path, now);
    options.changed(path);
  };

  /** Watches what the path reaches now; a file that cannot be watched waits for the backstop. */
  const arm = (path: string) => {
    watchers.get(path)?.close();
    watchers.delete(path);
    try {
      const watcher = watch(path, { persistent: false }, (event) => {
        compare(path);
        // The watched file was replaced or removed: watch what the path reaches now.
        if (event === "rename") arm(path);
      });
      watcher.on("error", () => {
        if (watchers.get(path) === watcher) watchers.delete(path);
      });
      watchers.set(path, watcher);
    } catch {
      // Missing (between an unlink and a rename, say) or not watchable: the backstop tries again.
    }
    // What changed between the old watch's end and this one.
    compare(path);
  };

  const backstop = setInterval(() => {
    for (const path of seen.keys()) {
      compare(path);
      if (!watchers.has(path)) arm(path);
    }
  }, options.backstopMs);
  backstop.unref();

  return {
    /** Starts following the paths not followed yet, from their stamps now. */
    follow(paths: readonly string[]) {
      for (const path of paths) {
        if (seen.has(path)) continue;
        seen.set(path, stampOf(path));
        arm(path);
      }
    },
    stop() {
      clearInterval(backstop);
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
      seen.clear();
    },
  };
}
