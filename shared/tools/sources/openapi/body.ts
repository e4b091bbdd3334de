import { docPath } from "../../diagnostics.ts";
import { isObject, type Json, type JsonObject } from "../../schema-merge.ts";
import { placeAt } from "./defs.ts";
import type { OperationContext } from "./operation.ts";

/** How the executor must send the body: `extensions["x-service-request-body"]`. */
export interface BodyInfo {
  mediaType: string;
  encoding: string;
  wrapped: boolean;
}

export function isFileSchema(s: Json): boolean {
  if (!isObject(s)) return false;
  if (s.format === "binary" || s.format === "base64" || typeof s.contentMediaType === "string")
    return true;
  return isObject(s.items) && isFileSchema(s.items);
}

/** Object bodies are spread at the top level; everything else goes under `body`. */
function spreadable(s: Json): s is JsonObject & { properties: JsonObject } {
  if (!isObject(s) || !isObject(s.properties)) return false;
  if ("oneOf" in s || "anyOf" in s || "allOf" in s || "$ref" in s) return false;
  if (s.type !== undefined && s.type !== "object") return false;
  return s.additionalProperties === undefined || s.additionalProperties === false;
}

function pickMediaType(content: JsonObject): string | undefined {
  const types = Object.keys(content);
  return (
    types.find((t) => /^application\/json\b/i.test(t)) ??
    types.find((t) => /\+json\b/i.test(t)) ??
    types.find((t) => /^application\/x-www-form-urlencoded\b/i.test(t)) ??
    types.find((t) => /^multipart\/form-data\b/i.test(t)) ??
    types[0]
  );
}

export interface BodySpec {
  schema: Json;
  /** Pointer of the schema in the source document. */
  source: (string | number)[];
  required: boolean;
  mediaType: string;
  encoding: string;
  where: string;
  forceWrap?: boolean;
}

/** Spreads a plain object body into the inputs, or passes anything else as `body`. */
export function addBody(c: OperationContext, b: BodySpec): BodyInfo {
  const root = c.d.schemas.bodyRoot(b.schema);
  if (!b.forceWrap && spreadable(root)) {
    const req =
      b.required && Array.isArray(root.required)
        ? root.required.filter((r) => typeof r === "string")
        : [];
    for (const [k, v] of Object.entries(root.properties)) {
      c.entries.push({
        wire: k,
        name: k,
        in: "body",
        schema: v,
        required: req.includes(k),
        source: [...b.source, "properties", k],
      });
    }
    return { mediaType: b.mediaType, encoding: b.encoding, wrapped: false };
  }
  if (!b.forceWrap)
    c.d.sink.add(
      "body.wrapped",
      b.where,
      "the request body is not a plain object; it is passed as `body`",
    );
  c.entries.push({
    wire: "body",
    name: "body",
    in: "body",
    schema: b.schema,
    required: b.required,
    source: b.source,
  });
  return { mediaType: b.mediaType, encoding: b.encoding, wrapped: true };
}

/** Request body step (OpenAPI 3): picks a media type and maps its schema to inputs. */
export function requestBodyStep(c: OperationContext): void {
  const { op, d } = c;
  if (op.requestBody === undefined || d.dialect.swagger2) return;
  const rbPtr = [...c.opPtr, "requestBody"];
  const rbWhere = docPath(d.label, rbPtr);
  const rb = d.schemas.deref(op.requestBody)?.value;
  const content = isObject(rb) && isObject(rb.content) ? rb.content : undefined;
  const mt = content ? pickMediaType(content) : undefined;
  if (!isObject(rb) || !content || !mt) {
    if (rb !== undefined)
      d.sink.add(
        "body.unsupported_media",
        rbWhere,
        "request body has no usable content; no body inputs",
      );
    return;
  }
  if (Object.keys(content).length > 1) {
    d.sink.add(
      "body.media_type_chosen",
      rbWhere,
      `body offers ${Object.keys(content).join(", ")}; using ${mt}`,
    );
  }
  const media = content[mt];
  const schemaPtr = [...rbPtr, "content", mt, "schema"];
  const schema = d.schemas.expand(
    isObject(media) && media.schema !== undefined ? media.schema : {},
    placeAt(d.label, schemaPtr),
  );
  const spec = {
    schema,
    source: schemaPtr,
    required: rb.required === true,
    mediaType: mt,
    where: rbWhere,
  };
  if (/json/i.test(mt)) {
    c.bodyInfo = addBody(c, { ...spec, encoding: "json" });
  } else if (/^application\/x-www-form-urlencoded/i.test(mt)) {
    d.sink.add("body.form_urlencoded", rbWhere, "form-urlencoded body mapped to properties");
    c.bodyInfo = addBody(c, { ...spec, encoding: "form" });
  } else if (/^multipart\//i.test(mt)) {
    d.sink.add(
      "body.multipart",
      rbWhere,
      `${mt} body mapped to properties; the executor encodes the parts`,
    );
    const root = d.schemas.bodyRoot(schema);
    if (isObject(root) && isObject(root.properties)) {
      for (const [k, v] of Object.entries(root.properties)) {
        if (isFileSchema(d.schemas.bodyRoot(v)))
          d.sink.add(
            "body.file_part",
            docPath(d.label, [...schemaPtr, "properties", k]),
            `part ${k} is a file`,
          );
      }
    }
    c.bodyInfo = addBody(c, { ...spec, encoding: "multipart" });
  } else {
    d.sink.add(
      "body.unsupported_media",
      rbWhere,
      `body media type ${mt} is passed as a raw value under body`,
    );
    c.bodyInfo = addBody(c, { ...spec, encoding: "raw", forceWrap: true });
  }
}
