/**
 * The module boundaries of services/ and shared/, checked from the import graph.
 *
 * A module is a folder directly under services/ or shared/ (services/ingress, shared/bus); its
 * index.ts is its only door. Three rules:
 * - shared/ never imports services/ (the arrows run from services down to shared);
 * - a service imports no other service, except services/runtime and services/cli, which compose
 *   the others;
 * - an import from one module into another goes through the other's index.ts, never past it.
 *
 * `checkBoundaries` is pure over an import graph; `readImportGraph` builds that graph from the tree.
 */
import { readdir, readFile } from "node:fs/promises";
import { dirname, join, posix, relative, sep } from "node:path";

/** One import: `from` imports `to`; both are paths relative to the repository root, with `/`. */
export interface ImportEdge {
  readonly from: string;
  readonly to: string;
}

export type BoundaryRule = "shared-imports-service" | "service-imports-service" | "past-index";

export interface BoundaryViolation extends ImportEdge {
  readonly rule: BoundaryRule;
}

const LAYERS = ["services", "shared"] as const;
/** The services that start and wire the others (`switchyard up`, `serve`, the CLI's commands). */
const COMPOSERS = new Set(["services/runtime", "services/cli"]);

/** The module a path belongs to (`services/ingress`), or undefined outside services/ and shared/. */
export function moduleOf(path: string): string | undefined {
  const [layer, name, ...rest] = path.split("/");
  if (!layer || !name || rest.length === 0) return undefined;
  return (LAYERS as readonly string[]).includes(layer) ? `${layer}/${name}` : undefined;
}

function violationOf(edge: ImportEdge): BoundaryRule | undefined {
  const from = moduleOf(edge.from);
  const to = moduleOf(edge.to);
  if (!from || !to || from === to) return undefined;
  if (from.startsWith("shared/") && to.startsWith("services/")) return "shared-imports-service";
  if (from.startsWith("services/") && to.startsWith("services/") && !COMPOSERS.has(from)) {
    return "service-imports-service";
  }
  if (edge.to !== `${to}/index.ts`) return "past-index";
  return undefined;
}

/** Every import of the graph that crosses a boundary the wrong way. */
export function checkBoundaries(edges: readonly ImportEdge[]): BoundaryViolation[] {
  const found: BoundaryViolation[] = [];
  for (const edge of edges) {
    const rule = violationOf(edge);
    if (rule) found.push({ ...edge, rule });
  }
  return found;
}

// Static imports and re-exports (`import x from`, `import type`, `export * from`, side-effect
// imports) and dynamic `import("…")`, across lines.
const IMPORT_PATTERN =
  /(?:^|[;\s])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;

/** The relative specifiers a source file imports (packages are not module boundaries here). */
export function importSpecifiers(source: string): string[] {
  const specifiers: string[] = [];
  for (const match of source.matchAll(IMPORT_PATTERN)) {
    const specifier = match[1] ?? match[2];
    if (specifier?.startsWith(".")) specifiers.push(specifier);
  }
  return specifiers;
}

async function typescriptFiles(root: string, folder: string): Promise<string[]> {
  const entries = await readdir(join(root, folder), { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => relative(root, join(e.parentPath, e.name)).split(sep).join("/"));
}

/** The relative imports of every .ts file under services/ and shared/. */
export async function readImportGraph(root: string): Promise<ImportEdge[]> {
  const edges: ImportEdge[] = [];
  for (const layer of LAYERS) {
    for (const file of await typescriptFiles(root, layer)) {
      const source = await readFile(join(root, file), "utf8");
      for (const specifier of importSpecifiers(source)) {
        edges.push({ from: file, to: posix.join(posix.dirname(file), specifier) });
      }
    }
  }
  return edges;
}

export const REPOSITORY_ROOT = dirname(dirname(import.meta.dir));
