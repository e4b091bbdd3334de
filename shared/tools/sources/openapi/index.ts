import { docPath } from "../../diagnostics.ts";
import { isObject, type JsonObject } from "../../schema-merge.ts";
import type { HttpMethod } from "../../schemas.ts";
import type { CompileInput, PlannedTool, SourceContext, ToolSource } from "../types.ts";
import { SchemaDefs } from "./defs.ts";
import { dialectOf, type OpenApiDocument, openApiVersion } from "./document.ts";
import { buildOperation, operationContext, planOperation } from "./operation.ts";

export { openApiVersion } from "./document.ts";

const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;

/** The document context, or undefined (reported) when this is no OpenAPI/Swagger we compile. */
function openDocument(input: CompileInput, ctx: SourceContext): OpenApiDocument | undefined {
  const { label, doc } = input;
  const version = openApiVersion(doc);
  if (!isObject(doc) || version === undefined || version === "unsupported") {
    ctx.sink.add(
      "input.unsupported_version",
      docPath(label, isObject(doc) && "swagger" in doc ? ["swagger"] : ["openapi"]),
      "only Swagger 2.0 and OpenAPI 3.0/3.1 are compiled",
    );
    return undefined;
  }
  return {
    label,
    doc,
    dialect: dialectOf(doc),
    schemas: new SchemaDefs(input.docId ?? label, label, doc, ctx.sink, input.readDocument),
    sink: ctx.sink,
    ...(input.overlayChanged ? { overlayChanged: input.overlayChanged } : {}),
  };
}

/** Plans the operations of one path item. */
function planPathItem(
  d: OpenApiDocument,
  ctx: SourceContext,
  path: string,
  item: JsonObject,
): PlannedTool[] {
  const out: PlannedTool[] = [];
  for (const m of HTTP_METHODS) {
    if (!(m in item)) continue;
    const seq = ctx.startTool();
    const opPtr = ["paths", path, m];
    const where = docPath(d.label, opPtr);
    if (m === "trace") {
      d.sink.add("operation.method_unsupported", where, `TRACE ${path} is not compiled`);
      continue;
    }
    const op = item[m];
    if (!isObject(op)) {
      d.sink.add(
        "operation.invalid",
        where,
        `${m.toUpperCase()} ${path} is not an object; skipped`,
      );
      continue;
    }
    d.schemas.currentPath = where;
    const method = m.toUpperCase() as HttpMethod;
    const c = planOperation(operationContext({ d, path, item, method, op, opPtr }));
    if (!c) continue;
    const candidate = { name: c.name, key: `openapi|${method} ${path}`, path: where, seq };
    out.push({ seq, candidate, build: (name) => buildOperation(c, name) });
  }
  return out;
}

/**
 * Plans every operation of an OpenAPI 3.0/3.1 or Swagger 2.0 document. Never throws for
 * malformed documents: every skipped or altered part is reported.
 */
function planOpenApi(input: CompileInput, ctx: SourceContext): PlannedTool[] {
  const d = openDocument(input, ctx);
  if (!d) return [];
  const paths = d.doc.paths;
  const out: PlannedTool[] = [];
  if (!isObject(paths) || Object.keys(paths).length === 0) {
    ctx.sink.add("input.no_operations", docPath(d.label, ["paths"]), "the document has no paths");
    return out;
  }
  let items = 0;
  for (const [path, rawItem] of Object.entries(paths)) {
    // The Paths Object allows specification extensions next to the paths.
    if (path.startsWith("x-")) continue;
    const itemPtr = ["paths", path];
    d.schemas.currentPath = docPath(d.label, itemPtr);
    const item = isObject(rawItem) ? d.schemas.deref(rawItem)?.value : undefined;
    if (!path.startsWith("/") || !isObject(item)) {
      ctx.sink.add(
        "operation.invalid",
        docPath(d.label, itemPtr),
        `path item ${path} is not usable; skipped`,
      );
      continue;
    }
    items++;
    out.push(...planPathItem(d, ctx, path, item));
  }
  if (out.length === 0 && items === 0)
    ctx.sink.add(
      "input.no_operations",
      docPath(d.label, ["paths"]),
      "the document has no operations",
    );
  return out;
}

/** OpenAPI 3.0/3.1 and Swagger 2.0 descriptions, JSON or YAML. */
export const openApiSource: ToolSource = {
  kind: "openapi",
  detect: (doc) => openApiVersion(doc) !== undefined,
  plan: planOpenApi,
};
