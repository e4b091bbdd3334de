import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { KV } from "@nats-io/kv";
import { loadMetaSecret } from "../../shared/bus/index.ts";
import type { OperatorConfig } from "../../shared/config/index.ts";
import { RateLimitedError, UnauthorizedError } from "../../shared/errors/index.ts";
import { CsrfError, ForbiddenError } from "../../shared/errors/operator.ts";

/** Who is calling the operator API, and how: a bearer credential or a console session. */
export interface OperatorCaller {
  readonly operator: OperatorConfig;
  readonly via: "bearer" | "session";
  /** The session's CSRF token (console sessions only). */
  readonly csrf?: string;
}

/** Resolves a bearer credential to an operator id (the ingress's token/JWT authenticator). */
export interface CredentialCheck {
  authenticate(authorization: string | null): Promise<{ readonly id: string }>;
}

/** Failed authentications per address (the ingress's limiter), checked before any credential. */
export interface FailureLimiter {
  blockedFor(address: string): number;
  failed(address: string): void;
}

export const SESSION_COOKIE = "sy_console";
const SESSION_KEY = "console_session_key";
const CHALLENGE = { "www-authenticate": 'Bearer realm="switchyard-operators"' };

/** The hub-wide key that signs console sessions, created once in sy_meta (every replica agrees). */
export function loadSessionKey(meta: KV): Promise<Buffer> {
  return loadMetaSecret(meta, { key: SESSION_KEY });
}

/** Which credential an operator logged in with: a token's hash, or the JWT issuer and subject. */
function credentialOf(operator: OperatorConfig, authorization: string): string {
  const token = /^Bearer\s+(\S+)/i.exec(authorization)?.[1] ?? "";
  const hash = createHash("sha256").update(token).digest("hex");
  return operator.token_sha256.includes(hash) ? hash.slice(0, 16) : "jwt";
}

/** True when the credential a session was made from is still configured for the operator. */
function credentialStillValid(operator: OperatorConfig, credential: string): boolean {
  if (credential === "jwt") return operator.jwt !== undefined;
  return operator.token_sha256.some((h) => h.startsWith(credential));
}

interface SessionBody {
  readonly o: string;
  readonly c: string;
  readonly e: number;
  readonly n: string;
}

export interface OperatorAuthDeps {
  readonly operators: readonly OperatorConfig[];
  readonly credentials: CredentialCheck;
  readonly limiter?: FailureLimiter;
  readonly sessionKey: Buffer;
  readonly sessionTtlMs: number;
  readonly now: () => number;
}

/**
 * Operator authentication (docs/operations.md, "Operators"): bearer credentials (hashed tokens or
 * JWTs, never client tokens) for the API and the CLI; for the console, a session cookie
 * (HttpOnly, SameSite=Strict) signed with a hub-wide key, valid until it expires or its
 * credential is removed from the config, with a CSRF token every action must carry.
 */
export function createOperatorAuth(deps: OperatorAuthDeps) {
  const byId = new Map(deps.operators.map((o) => [o.id, o]));
  const sign = (text: string) =>
    createHmac("sha256", deps.sessionKey).update(text).digest("base64url");
  const csrfOf = (nonce: string) => sign(`csrf:${nonce}`);
  const sameText = (a: string, b: string) =>
    a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

  const throttle = (address: string) => {
    const blocked = deps.limiter?.blockedFor(address) ?? 0;
    if (blocked > 0) {
      throw new RateLimitedError({
        detail: "Too many failed authentications from this address.",
        headers: { "retry-after": String(blocked) },
      });
    }
  };

  /** The operator of a bearer credential; 401 for anything else (client tokens included). */
  const bearer = async (authorization: string, address: string): Promise<OperatorConfig> => {
    throttle(address);
    try {
      const { id } = await deps.credentials.authenticate(authorization);
      const operator = byId.get(id);
      if (operator) return operator;
    } catch {
      // Counted below, like any unknown credential.
    }
    deps.limiter?.failed(address);
    throw new UnauthorizedError({
      detail: "The bearer token is not an operator credential.",
      headers: CHALLENGE,
    });
  };

  const session = (cookie: string): OperatorCaller | undefined => {
    const [body, mac] = cookie.split(".");
    if (!body || !mac || !sameText(sign(body), mac)) return undefined;
    let parsed: SessionBody;
    try {
      parsed = JSON.parse(Buffer.from(body, "base64url").toString()) as SessionBody;
    } catch {
      return undefined;
    }
    const operator = byId.get(parsed.o);
    if (!operator || parsed.e <= deps.now() || !credentialStillValid(operator, parsed.c)) {
      return undefined;
    }
    return { operator, via: "session", csrf: csrfOf(parsed.n) };
  };

  return {
    /** The caller of an operator API request; 401 without a valid credential or session. */
    async caller(request: Request, address: string): Promise<OperatorCaller> {
      const authorization = request.headers.get("authorization");
      if (authorization) return { operator: await bearer(authorization, address), via: "bearer" };
      const cookie = readCookie(request, SESSION_COOKIE);
      const found = cookie ? session(cookie) : undefined;
      if (found) return found;
      throw new UnauthorizedError({
        detail: "Send an operator token (Authorization: Bearer) or log in to the console.",
        headers: CHALLENGE,
      });
    },

    /** Logs in with an operator credential; the Set-Cookie value of the new session. */
    async login(token: string, address: string, secure: boolean): Promise<string> {
      const authorization = `Bearer ${token}`;
      const operator = await bearer(authorization, address);
      const expires = deps.now() + deps.sessionTtlMs;
      const body: SessionBody = {
        o: operator.id,
        c: credentialOf(operator, authorization),
        e: expires,
        n: randomBytes(16).toString("base64url"),
      };
      const text = Buffer.from(JSON.stringify(body)).toString("base64url");
      return cookieHeader(`${text}.${sign(text)}`, Math.floor(deps.sessionTtlMs / 1000), secure);
    },

    /** Refuses an unsafe request of a console session without its CSRF token or from elsewhere. */
    checkCsrf(request: Request, caller: OperatorCaller): void {
      if (caller.via !== "session") return;
      const site = request.headers.get("sec-fetch-site");
      if (site !== null && site !== "same-origin") {
        throw new CsrfError({ detail: "Console actions must come from the console itself." });
      }
      const token = request.headers.get("x-csrf-token") ?? "";
      if (!caller.csrf || !sameText(token, caller.csrf)) {
        throw new CsrfError({ detail: "Missing or wrong X-CSRF-Token header." });
      }
    },
  };
}

export type OperatorAuth = ReturnType<typeof createOperatorAuth>;

/** Only operators with the `operator` role act; viewers read. */
export function requireOperatorRole(caller: OperatorCaller): void {
  if (caller.operator.role !== "operator") {
    throw new ForbiddenError({
      detail: `Operator '${caller.operator.id}' has the viewer role and cannot act.`,
    });
  }
}

export function cookieHeader(value: string, maxAgeSec: number, secure: boolean): string {
  return [
    `${SESSION_COOKIE}=${value}`,
    "Path=/",
    "HttpOnly",
    "SameSite=Strict",
    `Max-Age=${maxAgeSec}`,
    ...(secure ? ["Secure"] : []),
  ].join("; ");
}

export function readCookie(request: Request, name: string): string | undefined {
  const header = request.headers.get("cookie") ?? "";
  for (const part of header.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return rest.join("=");
  }
  return undefined;
}
