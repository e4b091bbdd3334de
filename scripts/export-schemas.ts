/**
 * Writes the JSON Schema and OpenAPI files under schemas/ from the TypeBox definitions in the
 * code. Tests compare the committed files with this output, so the two cannot drift.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { buildOpenApiDocument } from "../services/ingress/openapi.ts";
import { EVENT_SCHEMAS, JobEvent } from "../shared/domain/index.ts";

const root = join(import.meta.dir, "..", "schemas");

/** JSON text of a TypeBox schema as a standalone 2020-12 document. */
export function schemaDocument(schema: unknown): string {
  const plain = JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
  return `${JSON.stringify({ $schema: "https://json-schema.org/draft/2020-12/schema", ...plain }, null, 2)}\n`;
}

/** Every generated file: path relative to schemas/ → content. */
export function generatedSchemaFiles(): Record<string, string> {
  const files: Record<string, string> = {
    "client-api-v1.openapi.json": `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`,
    "events/job-event.v1.json": schemaDocument(JobEvent),
  };
  for (const [type, schema] of Object.entries(EVENT_SCHEMAS)) {
    files[`events/${type}.v1.json`] = schemaDocument(schema);
  }
  return files;
}

if (import.meta.main) {
  for (const [path, content] of Object.entries(generatedSchemaFiles())) {
    await mkdir(join(root, path, ".."), { recursive: true });
    await writeFile(join(root, path), content);
    process.stdout.write(`wrote schemas/${path}\n`);
  }
}
