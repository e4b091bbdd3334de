export { type MigrationDeps, type MigrationReport, migrateStore } from "./migrate.ts";
