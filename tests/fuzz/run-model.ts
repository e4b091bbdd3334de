/**
 * An independent model of POST /run, written from docs/api.md and docs/errors.md rather than from
 * the ingress code: given what a client sends, which status and problem code must come back.
 */

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
export const CALLBACK_URLS: Readonly<Record<string, "ok" | "refused" | "invalid">> = {
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

function fieldsValid(v: Record<string, unknown>): boolean {
  if (Object.keys(v).some((k) => !KNOWN.has(k))) return false;
  const { request_id, route, input, metadata, callback_url } = v;
  if (typeof request_id !== "string" || chars(request_id) < 1 || chars(request_id) > 255) {
    return false;
  }
  if (typeof route !== "string" || chars(route) < 1 || chars(route) > 128) return false;
  if (typeof input !== "string") return false;
  if ("metadata" in v) {
    if (!isPlainObject(metadata)) return false;
    if ("principal" in metadata) {
      const p = metadata.principal;
      if (!isPlainObject(p)) return false;
      if (typeof p.id !== "string" || p.id === "") return false;
      if (typeof p.tenant !== "string" || p.tenant === "") return false;
    }
  }
  if ("callback_url" in v) {
    if (typeof callback_url !== "string" || chars(callback_url) > 2048) return false;
    if (!absoluteHttpUrl(callback_url)) return false;
  }
  for (const text of [request_id, route, input, callback_url]) {
    if (typeof text === "string" && !wellFormed(text)) return false;
  }
  return metadata === undefined || metadataWithinLimits(metadata);
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
  if (!isPlainObject(value) || !fieldsValid(value)) {
    return { status: 400, code: "invalid_request" };
  }
  if (value.metadata !== undefined && !numbersKept(new TextDecoder().decode(req.body))) {
    return { status: 400, code: "invalid_request" };
  }
  const route = value.route as string;
  const limit = ROUTES[route];
  if (limit === undefined || !routeAllowed(client, route)) {
    return { status: 403, code: "route_not_allowed" };
  }
  if (Buffer.byteLength(value.input as string, "utf8") > limit) {
    return { status: 400, code: "invalid_request" };
  }
  if (typeof value.callback_url === "string") {
    const fate = CALLBACK_URLS[value.callback_url];
    if (fate === undefined) throw new Error(`unmodelled callback_url ${value.callback_url}`);
    if (client !== CALLBACK_CLIENT || fate !== "ok") {
      return { status: 400, code: "callback_url_refused" };
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
