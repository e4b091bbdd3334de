/**
 * Writes schemas/tool-definition.v1.json, confirm-condition.json, diagnostic.json and
 * compile-result.json from the TypeBox definitions in shared/tools/schemas.ts.
 * Run: npx bun scripts/export-tool-schemas.ts (tests/tools/schema-files.test.ts checks the files).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SCHEMA_FILES, schemaFileContent } from "../shared/tools/schemas.ts";

const dir = join(import.meta.dir, "..", "schemas");
for (const file of Object.keys(SCHEMA_FILES)) {
  const target = join(dir, `${file}.json`);
  writeFileSync(target, `${JSON.stringify(schemaFileContent(file), null, 2)}\n`);
  console.log(`wrote ${target}`);
}
