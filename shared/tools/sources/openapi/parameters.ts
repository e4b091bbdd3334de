import { docPath } from "../../diagnostics.ts";
import { cutAtWord } from "../../record.ts";
import { isObject, type Json, type JsonObject } from "../../schema-merge.ts";
import { LIMITS } from "../../schemas.ts";
import { addBody, isFileSchema } from "./body.ts";
import { placeAt } from "./defs.ts";
import type { Entry } from "./merge.ts";
import type { OperationContext } from "./operation.ts";

const TRANSPORT_HEADERS = new Set(["accept", "content-type", "content-length"]);
const CREDENTIAL_HEADERS = new Set(["authorization", "proxy-authorization", "cookie"]);

/** Swagger 2.0 keeps schema keywords on the parameter itself. */
const SWAGGER_PARAM_KEYWORDS = [
  "type",
  "format",
  "items",
  "enum",
  "default",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "pattern",
  "minItems",
  "maxItems",
  "uniqueItems",
  "multipleOf",
];

function swaggerParamSchema(p: JsonObject): JsonObject {
  const s: JsonObject = {};
  for (const k of SWAGGER_PARAM_KEYWORDS) if (k in p) s[k] = p[k] as Json;
  return s;
}

interface Param {
  p: JsonObject;
  ptr: (string | number)[];
}

/** Path-level then operation-level parameters; the operation's win for the same name and `in`. */
function collectParameters(c: OperationContext): Map<string, Param> {
  const params = new Map<string, Param>();
  const collect = (list: Json | undefined, ptr: (string | number)[]) => {
    if (!Array.isArray(list)) return;
    list.forEach((raw, i) => {
      const pptr = [...ptr, i];
      const resolved = c.d.schemas.deref(raw);
      const p = resolved?.value;
      if (!isObject(p) || typeof p.name !== "string" || typeof p.in !== "string") {
        if (resolved)
          c.d.sink.add(
            "param.invalid",
            docPath(c.d.label, pptr),
            "parameter without name or in; skipped",
          );
        return;
      }
      params.set(`${p.in}\u0000${p.name}`, { p, ptr: pptr });
    });
  };
  collect(c.item.parameters, ["paths", c.path, "parameters"]);
  collect(c.op.parameters, [...c.opPtr, "parameters"]);
  return params;
}

/** Why a parameter stays out of the inputs (credentials, transport headers), or undefined. */
function excluded(c: OperationContext, name: string, location: string): string | undefined {
  const { header, query } = c.d.dialect.credentialNames;
  if (location === "cookie")
    return `cookie parameter ${name} kept out of the tool inputs (cookies carry session credentials)`;
  if (
    location === "header" &&
    (CREDENTIAL_HEADERS.has(name.toLowerCase()) || header.has(name.toLowerCase()))
  )
    return `header ${name} carries credentials; the executor supplies it`;
  if (location === "query" && query.has(name))
    return `query parameter ${name} is an API key; the executor supplies it`;
  return undefined;
}

/** The schema of a non-body parameter: Swagger keywords, `schema`, or the first `content` entry. */
function parameterSchema(
  c: OperationContext,
  param: Param,
): { schema: Json; ptr: (string | number)[] } {
  const { p, ptr } = param;
  if (c.d.dialect.swagger2) return { schema: swaggerParamSchema(p), ptr };
  if (p.schema !== undefined) return { schema: p.schema, ptr: [...ptr, "schema"] };
  if (isObject(p.content)) {
    const mt = Object.keys(p.content)[0];
    const media = mt ? p.content[mt] : undefined;
    if (isObject(media) && media.schema !== undefined)
      return { schema: media.schema, ptr: [...ptr, "content", mt as string, "schema"] };
  }
  return { schema: {}, ptr };
}

/** A parameter's converted schema (with its description); shared parameters convert once. */
function convertedSchema(
  c: OperationContext,
  param: Param,
): { schema: Json; ptr: (string | number)[] } {
  const { schema, ptr } = parameterSchema(c, param);
  const memo = c.d.schemas.parameterSchemas;
  const known = memo.get(param.p);
  if (known !== undefined) return { schema: known, ptr };
  let expanded = c.d.schemas.expand(schema, placeAt(c.d.label, ptr));
  const description = param.p.description;
  if (isObject(expanded) && typeof description === "string" && !("description" in expanded)) {
    expanded = { ...expanded, description: cutAtWord(description, LIMITS.description) };
  }
  memo.set(param.p, expanded);
  return { schema: expanded, ptr };
}

/**
 * Parameters step: path, query and header parameters become inputs; credentials and transport
 * headers stay out (reported); Swagger 2.0 `body` and `formData` parameters become the body.
 */
export function parametersStep(c: OperationContext): void {
  const sink = c.d.sink;
  const form: Entry[] = [];
  let multipart = false;
  for (const param of collectParameters(c).values()) {
    const { p, ptr } = param;
    const pname = p.name as string;
    const pin = p.in as string;
    const pwhere = () => docPath(c.d.label, ptr);
    const why = excluded(c, pname, pin);
    if (why) {
      sink.add("param.credential_excluded", pwhere(), why);
      continue;
    }
    if (pin === "header" && TRANSPORT_HEADERS.has(pname.toLowerCase())) {
      sink.add("param.header_ignored", pwhere(), `header ${pname} is set by the transport`);
      continue;
    }
    if (pin === "body") {
      const schema = c.d.schemas.expand(p.schema ?? {}, placeAt(c.d.label, [...ptr, "schema"]));
      c.bodyInfo = addBody(c, {
        schema,
        source: [...ptr, "schema"],
        required: p.required === true,
        mediaType: "application/json",
        encoding: "json",
        where: pwhere(),
      });
      continue;
    }
    const { schema: expanded, ptr: schemaPtr } = convertedSchema(c, param);
    const entry = { wire: pname, name: pname, schema: expanded, source: schemaPtr };
    if (pin === "formData") {
      if (isFileSchema(expanded)) {
        multipart = true;
        sink.add("body.file_part", pwhere(), `form field ${pname} is a file`);
      }
      form.push({ ...entry, in: "body", required: p.required === true });
      continue;
    }
    if (pin !== "path" && pin !== "query" && pin !== "header") {
      sink.add(
        "param.invalid",
        pwhere(),
        `parameter ${pname} has unknown location ${pin}; skipped`,
      );
      continue;
    }
    c.entries.push({ ...entry, in: pin, required: pin === "path" || p.required === true });
  }
  if (form.length > 0) formDataBody(c, form, multipart);
}

/** Swagger 2.0 formData parameters: a form-urlencoded or multipart body spread into inputs. */
function formDataBody(c: OperationContext, form: Entry[], multipart: boolean): void {
  const consumes = Array.isArray(c.op.consumes)
    ? c.op.consumes
    : Array.isArray(c.d.doc.consumes)
      ? c.d.doc.consumes
      : [];
  if (multipart || consumes.some((t) => typeof t === "string" && t.startsWith("multipart/"))) {
    c.d.sink.add("body.multipart", c.where, "multipart/form-data body mapped to properties");
    c.bodyInfo = { mediaType: "multipart/form-data", encoding: "multipart", wrapped: false };
  } else {
    c.d.sink.add("body.form_urlencoded", c.where, "form-urlencoded body mapped to properties");
    c.bodyInfo = {
      mediaType: "application/x-www-form-urlencoded",
      encoding: "form",
      wrapped: false,
    };
  }
  c.entries.push(...form);
}
