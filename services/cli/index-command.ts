import { existsSync } from "node:fs";
import { resolve } from "node:path";
import type { Config } from "../../shared/config/index.ts";
import type { HubConnection } from "../../shared/hub/index.ts";
import type { Logger } from "../../shared/log/index.ts";
import { createProgress, type ProgressSink } from "../../shared/progress/index.ts";
import { type IndexStore, openIndexStore } from "../../shared/search/index.ts";
import { rebuildIndex } from "../indexer/index.ts";

/** The configured search index, if this hub has one here (a SQLite file must exist already). */
export async function openConfiguredIndex(config: Config): Promise<IndexStore | undefined> {
  if (!config.index.enabled) return undefined;
  if (config.index.backend === "sqlite" && !existsSync(resolve(config.index.sqlite_path))) {
    return undefined;
  }
  return openIndexStore(config.index);
}

/**
 * `switchyard index rebuild`: empties the search index and folds the whole events stream into it
 * again: this command folds when no indexer runs, the running indexer otherwise (the job views go
 * on). Progress and ETA on a TTY.
 */
export async function runIndexRebuild(deps: {
  readonly hub: HubConnection;
  readonly config: Config;
  readonly logger: Logger;
  readonly progress: ProgressSink;
  readonly stdout: (text: string) => void;
}): Promise<number> {
  if (!deps.config.index.enabled) {
    deps.stdout("the search index is disabled (index.enabled: false); nothing to rebuild\n");
    return 1;
  }
  const store = await openIndexStore(deps.config.index);
  let last = 0;
  let bar: ReturnType<typeof createProgress> | undefined;
  try {
    const result = await rebuildIndex({
      nc: deps.hub.nc,
      js: deps.hub.js,
      jsm: deps.hub.jsm,
      layout: deps.hub.layout,
      store,
      logger: deps.logger,
      runningIndexer: (detail) => {
        deps.stdout(
          `an indexer is running (${detail}): the index is emptied and that indexer rebuilds it from the stream; the job views go on, and lists miss the jobs not indexed yet until it ends\n`,
        );
      },
      progress: (done, total) => {
        bar ??= createProgress({
          label: "index rebuild (events)",
          total,
          sink: deps.progress,
        });
        bar.tick(Math.max(0, done - last));
        last = done;
      },
    });
    bar?.done();
    const by = result.by === "indexer" ? "the running indexer rebuilt" : "rebuilt";
    deps.stdout(
      `${by} the search index (${store.backend}): ${result.jobs} jobs from ${result.events} events\n`,
    );
    return 0;
  } finally {
    await store.close();
  }
}
