import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { generatedSchemaFiles } from "../../scripts/export-schemas.ts";

const root = join(import.meta.dir, "../../schemas");

describe("schemas/ matches the TypeBox definitions", () => {
  for (const [path, content] of Object.entries(generatedSchemaFiles())) {
    test(`schemas/${path} is up to date (npm run schemas)`, async () => {
      const file = Bun.file(join(root, path));
      expect(await file.exists()).toBe(true);
      expect(await file.text()).toBe(content);
    });
  }
});
