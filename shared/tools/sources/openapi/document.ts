import type { DiagnosticSink } from "../../diagnostics.ts";
import { isObject, type JsonObject } from "../../schema-merge.ts";
import type { SchemaDefs } from "./defs.ts";

/** Which OpenAPI family a parsed document belongs to, or undefined. */
export function openApiVersion(doc: unknown): "2.0" | "3.0" | "3.1" | "unsupported" | undefined {
  if (!isObject(doc)) return undefined;
  if ("swagger" in doc) return doc.swagger === "2.0" ? "2.0" : "unsupported";
  if (!("openapi" in doc)) return undefined;
  const v = String(doc.openapi);
  if (/^3\.0(\.|$)/.test(v)) return "3.0";
  if (/^3\.[1-9](\.|$)/.test(v)) return "3.1";
  return "unsupported";
}

/** What differs between Swagger 2.0 and OpenAPI 3 and what the security schemes say. */
export interface Dialect {
  swagger2: boolean;
  credentialNames: { header: Set<string>; query: Set<string> };
  oauthSchemes: Set<string>;
}

export function dialectOf(doc: JsonObject): Dialect {
  const swagger2 = doc.swagger === "2.0";
  const schemes = swagger2
    ? doc.securityDefinitions
    : isObject(doc.components)
      ? doc.components.securitySchemes
      : undefined;
  const header = new Set<string>();
  const query = new Set<string>();
  const oauthSchemes = new Set<string>();
  if (isObject(schemes)) {
    for (const [id, s] of Object.entries(schemes)) {
      if (!isObject(s)) continue;
      if (s.type === "apiKey" && typeof s.name === "string") {
        if (s.in === "header") header.add(s.name.toLowerCase());
        if (s.in === "query") query.add(s.name);
      }
      if (s.type === "oauth2" || s.type === "openIdConnect") oauthSchemes.add(id);
    }
  }
  return { swagger2, credentialNames: { header, query }, oauthSchemes };
}

/** One OpenAPI document being compiled: what every operation of it shares. */
export interface OpenApiDocument {
  readonly label: string;
  readonly doc: JsonObject;
  readonly dialect: Dialect;
  readonly schemas: SchemaDefs;
  readonly sink: DiagnosticSink;
  /** "METHOD path" keys of operations an overlay changed. */
  readonly overlayChanged?: ReadonlySet<string>;
}
