/**
 * An independent model of POST /run, written from docs/api.md and docs/errors.md rather than from
 * the ingress code: given what a client sends, which status and problem code must come back, and
 * for a 400 which top-level fields may be named.
 */
import { type CallbackFate, GENERATED_CALLBACK_URLS } from "./string-fields.ts";

/** Clients of the fuzz hub: their tokens, route rules and whether they have a callback secret. */
export const CLIENTS = {
  acme: { token: "acme-fuzz-token-0123456789abcdef", routes: ["demo.*", "billing.invoice"] },
  globex: { token: "globex-fuzz-token-0123456789abcdef", routes: ["demo.*"] },
} as const;
export type ClientId = keyof typeof CLIENTS;
/** acme has callback_secrets, globex has none (so every callback_url of globex is refused). */
export const CALLBACK_CLIENT: ClientId = "acme";

/** Routes of tests/helpers/hub.ts DEFAULT_ROUTES, with their input limits. */
export const ROUTES: Readonly<Record<string, number>> = {
  "demo.echo": 65_536,
  "demo.sleep": 65_536,
  "demo.small": 16,
  "demo.off": 65_536, // disabled: accepted here, rejected later by the executor
  "billing.invoice": 65_536,
  "billing.secret": 65_536,
};

/** callback_url values whose fate is known: usable (public name, no DNS at submit) or refused. */
export const CALLBACK_URLS: Readonly<Record<string, CallbackFate>> = {
  "https://hooks.example.com/switchyard": "ok",
  "http://callbacks.example.org:8080/x?y=1": "ok",
  "http://127.0.0.1:9/cb": "refused",
  "http://169.254.169.254/latest/meta-data": "refused",
  "http://10.1.2.3/cb": "refused",
  "http://[::1]/cb": "refused",
  "http://localhost/cb": "refused",
  "https://user:pw@hooks.example.com/": "refused",
  "ftp://hooks.example.com/": "invalid",
  "hooks.example.com/cb": "invalid",
  "/relative": "invalid",
  "https://": "invalid",
  "": "invalid",
};

export interface Expected {
  readonly status: number;
  readonly code?: string;
  /** For a 400 of a JSON object: the top-level fields at fault; every error must point into one. */
  readonly fields?: readonly string[];
}

const KNOWN = new Set(["request_id", "route", "input", "metadata", "callback_url"]);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Length as docs/api.md defines it: UTF-16 code units (JavaScript string length), so a character
 * outside the BMP counts twice. (This fuzz test found that the implementation counts this way
 * while the docs said "characters"; the docs now say what the code does.)
 */
const chars = (s: string) => s.length;

function absoluteHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === "http:" || u.protocol === "https:") && u.hostname !== "";
  } catch {
    return false;
  }
}

/** A callback_url's fate from the tables; text no table knows must not be a usable URL. */
function callbackFate(url: string): CallbackFate {
  const fate = CALLBACK_URLS[url] ?? GENERATED_CALLBACK_URLS.get(url);
  if (fate !== undefined) return fate;
  // docs/api.md: no spaces or ASCII controls, whatever a URL parser would make of them.
  const controlOrSpace = [...url].some((c) => c <= " " || c === "\u007f");
  if (!absoluteHttpUrl(url) || controlOrSpace) return "invalid";
  throw new Error(`unmodelled callback_url ${JSON.stringify(url)}`);
}

/** docs/config.md server.metadata defaults. */
export const METADATA_LIMITS = { depth: 16, members: 256, stringLength: 4096 } as const;

/** Unicode text: every surrogate is half of a pair (docs/api.md: unpaired ones are refused). */
function wellFormed(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xdc00 && c <= 0xdfff) return false;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = s.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return false;
      i++;
    }
  }
  return true;
}

/** Metadata within docs/api.md's bounds: depth (metadata itself is 1), members, string lengths. */
function metadataWithinLimits(metadata: unknown): boolean {
  let members = 0;
  const within = (value: unknown, depth: number): boolean => {
    if (typeof value === "string")
      return chars(value) <= METADATA_LIMITS.stringLength && wellFormed(value);
    if (value === null || typeof value !== "object") return true;
    if (depth > METADATA_LIMITS.depth) return false;
    const entries = Array.isArray(value)
      ? value.map((v) => ["", v] as const)
      : Object.entries(value);
    members += entries.length;
    if (members > METADATA_LIMITS.members) return false;
    return entries.every(
      ([key, v]) =>
        (Array.isArray(value) || (chars(key) <= METADATA_LIMITS.stringLength && wellFormed(key))) &&
        within(v, depth + 1),
    );
  };
  return within(metadata, 1);
}

/** A decimal literal as (significant digits, exponent of the last digit); zero has no digits. */
function decimal(text: string): { digits: string; exponent: number } {
  const [mantissa = "", exp = "0"] = text.replace(/^-/, "").toLowerCase().split("e");
  const [whole = "", fraction = ""] = mantissa.split(".");
  let digits = `${whole}${fraction}`.replace(/^0+/, "");
  let exponent = Number(exp) - fraction.length;
  while (digits.endsWith("0")) {
    digits = digits.slice(0, -1);
    exponent++;
  }
  return digits === "" ? { digits: "", exponent: 0 } : { digits, exponent };
}

/** docs/api.md: a number literal must come back as the same decimal value from a double. */
function numbersKept(bodyText: string): boolean {
  let kept = true;
  JSON.parse(bodyText, (_k, value: unknown, context?: { source?: string }) => {
    if (typeof value === "number" && context?.source !== undefined) {
      const sent = decimal(context.source);
      const back = Number.isFinite(value) ? decimal(value.toExponential()) : undefined;
      if (!back || back.digits !== sent.digits || back.exponent !== sent.exponent) kept = false;
    }
    return value;
  });
  return kept;
}

const isText = (v: unknown, min: number, max: number) =>
  typeof v === "string" && chars(v) >= min && chars(v) <= max && wellFormed(v);

function metadataValid(metadata: unknown): boolean {
  if (!isPlainObject(metadata)) return false;
  if ("principal" in metadata) {
    const p = metadata.principal;
    if (!isPlainObject(p)) return false;
    if (typeof p.id !== "string" || p.id === "") return false;
    if (typeof p.tenant !== "string" || p.tenant === "") return false;
  }
  return metadataWithinLimits(metadata);
}

/** The top-level fields (unknown ones included) that break docs/api.md's rules; [] when none. */
function invalidFields(v: Record<string, unknown>): string[] {
  const bad = Object.keys(v).filter((k) => !KNOWN.has(k));
  const { request_id, route, input, callback_url } = v;
  if (!isText(request_id, 1, 255)) bad.push("request_id");
  if (!isText(route, 1, 128)) bad.push("route");
  if (!isText(input, 0, Number.POSITIVE_INFINITY)) bad.push("input");
  if ("metadata" in v && !metadataValid(v.metadata)) bad.push("metadata");
  if (
    "callback_url" in v &&
    (!isText(callback_url, 0, 2048) || callbackFate(callback_url as string) === "invalid")
  ) {
    bad.push("callback_url");
  }
  return bad;
}

/** JSON text with sorted keys: "the same body" is the same JSON value (docs/api.md). */
export function sameJsonText(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sameJsonText).join(",")}]`;
  if (!isPlainObject(value)) return JSON.stringify(value);
  return `{${Object.keys(value)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${sameJsonText(value[k])}`)
    .join(",")}}`;
}

function routeAllowed(client: ClientId, route: string): boolean {
  return CLIENTS[client].routes.some(
    (rule) => rule === route || (rule.endsWith(".*") && route.startsWith(rule.slice(0, -1))),
  );
}

/** What the server sees of a bearer header: which client, if any. */
export function clientOf(authorization: string | null): ClientId | undefined {
  const match = /^bearer +(\S+) *$/i.exec(authorization ?? "");
  const token = match?.[1];
  return (Object.keys(CLIENTS) as ClientId[]).find((id) => CLIENTS[id].token === token);
}

/** The request as the server receives it (after fetch normalised the headers). */
export interface SentRequest {
  readonly authorization: string | null;
  readonly contentType: string | null;
  readonly body: Uint8Array;
}

/** Accepted runs so far, per client and request_id: the body's sameJsonText. */
export type Accepted = Map<string, string>;

/** The answer the documented rules demand; updates `accepted` when a new job is expected. */
export function expectedAnswer(req: SentRequest, accepted: Accepted): Expected {
  const client = clientOf(req.authorization);
  if (!client) return { status: 401, code: "unauthorized" };
  const mediaType = (req.contentType ?? "").split(";")[0]?.trim().toLowerCase();
  if (mediaType !== "application/json") return { status: 415, code: "unsupported_media_type" };
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(req.body));
  } catch {
    return { status: 400, code: "malformed_json" };
  }
  if (!isPlainObject(value)) return { status: 400, code: "invalid_request" };
  const bad = invalidFields(value);
  if (bad.length > 0) return { status: 400, code: "invalid_request", fields: bad };
  if (value.metadata !== undefined && !numbersKept(new TextDecoder().decode(req.body))) {
    return { status: 400, code: "invalid_request", fields: ["metadata"] };
  }
  const route = value.route as string;
  const limit = ROUTES[route];
  if (limit === undefined || !routeAllowed(client, route)) {
    return { status: 403, code: "route_not_allowed" };
  }
  if (Buffer.byteLength(value.input as string, "utf8") > limit) {
    return { status: 400, code: "invalid_request", fields: ["input"] };
  }
  if (typeof value.callback_url === "string") {
    const fate = callbackFate(value.callback_url);
    if (client !== CALLBACK_CLIENT || fate !== "ok") {
      return { status: 400, code: "callback_url_refused", fields: ["callback_url"] };
    }
  }
  const key = `${client}\n${value.request_id as string}`;
  const text = sameJsonText(value);
  const earlier = accepted.get(key);
  if (earlier === undefined) {
    accepted.set(key, text);
    return { status: 202 };
  }
  return earlier === text ? { status: 200 } : { status: 409, code: "request_id_conflict" };
}
