import { resolve } from "node:path";
import type { IndexConfig } from "../config/index.ts";
import { openPostgresIndex } from "./postgres.ts";
import { openSqliteIndex } from "./sqlite.ts";
import type { IndexStore } from "./types.ts";

/** Opens (and migrates) the configured index store: SQLite by default, PostgreSQL when set. */
export async function openIndexStore(config: IndexConfig): Promise<IndexStore> {
  const store =
    config.backend === "postgres"
      ? openPostgresIndex(config.postgres_url ?? "")
      : openSqliteIndex(resolve(config.sqlite_path));
  await store.migrate();
  return store;
}
