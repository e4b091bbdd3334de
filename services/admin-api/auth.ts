import type { KV } from "@nats-io/kv";
import { loadMetaSecret } from "../../shared/bus/index.ts";
import type { OperatorConfig, OperatorDirectory } from "../../shared/config/index.ts";
import { RateLimitedError, UnauthorizedError } from "../../shared/errors/index.ts";
import { CsrfError, ForbiddenError } from "./errors.ts";
import { requireSameOrigin } from "./same-origin.ts";
import {
  createSessions,
  expiryOf,
  SESSION_COOKIE,
  type SessionGenerations,
  sameText,
} from "./session.ts";

export { metaSessionGenerations, SESSION_COOKIE, type SessionGenerations } from "./session.ts";

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

const SESSION_KEY = "console_session_key";
const CHALLENGE = { "www-authenticate": 'Bearer realm="switchyard-operators"' };

/** The hub-wide key that signs console sessions, created once in sy_meta (every replica agrees). */
export function loadSessionKey(meta: KV): Promise<Buffer> {
  return loadMetaSecret(meta, { key: SESSION_KEY });
}

/** The token of an Authorization header ("" when it has none). */
const bearerToken = (authorization: string) => /^Bearer\s+(\S+)/i.exec(authorization)?.[1] ?? "";

export interface OperatorAuthDeps {
  /** The operators as reloaded: every check reads the current list (docs/operations.md). */
  readonly operators: Pick<OperatorDirectory, "operator">;
  readonly credentials: CredentialCheck;
  readonly limiter?: FailureLimiter;
  readonly sessionKey: Buffer;
  readonly sessionTtlMs: number;
  readonly generations: SessionGenerations;
  /** Where the session cookie is sent: the console's path and the operator API's. */
  readonly cookiePaths: readonly string[];
  readonly secureCookie: boolean;
  readonly now: () => number;
}

/**
 * Operator authentication (docs/operations.md, "Operators"): bearer credentials (hashed tokens or
 * JWTs with exp, never client tokens) for the API and the CLI; for the console, a session cookie
 * (HttpOnly, SameSite=Strict, sent only to the console and the operator API) signed with a
 * hub-wide key, valid until it expires (never after a JWT it was made from), the operator logs
 * out, or its credential is removed from the config, with a CSRF token every action must carry.
 * Operators are looked up at each request, so a reload that removes one ends its access at once.
 */
export function createOperatorAuth(deps: OperatorAuthDeps) {
  const sessions = createSessions(deps);

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
      // The credential check may lag a reload by its key imports; the directory does not.
      const operator = deps.operators.operator(id);
      // Operators have no require_exp switch: a JWT that never expires is no operator credential.
      if (operator && expiryOf(operator, bearerToken(authorization)) !== undefined) return operator;
    } catch {
      // Counted below, like any unknown credential.
    }
    deps.limiter?.failed(address);
    throw new UnauthorizedError({
      detail: "The bearer token is not an operator credential.",
      headers: CHALLENGE,
    });
  };

  return {
    /** The caller of an operator API request; 401 without a valid credential or session. */
    async caller(request: Request, address: string): Promise<OperatorCaller> {
      const authorization = request.headers.get("authorization");
      if (authorization) return { operator: await bearer(authorization, address), via: "bearer" };
      const cookie = readCookie(request, SESSION_COOKIE);
      const found = cookie ? await sessions.read(cookie) : undefined;
      if (found) return found;
      throw new UnauthorizedError({
        detail: "Send an operator token (Authorization: Bearer) or log in to the console.",
        headers: CHALLENGE,
      });
    },

    /**
     * Logs in with an operator credential: the Set-Cookie values of the new session, one per
     * cookie path. A session made from a JWT ends when the JWT does, if that is sooner.
     */
    async login(token: string, address: string): Promise<string[]> {
      return sessions.issue(await bearer(`Bearer ${token}`, address), token);
    },

    /**
     * Ends every console session of the caller's operator, on every replica (a new session
     * generation), and answers the Set-Cookie values that clear the cookie (also without a
     * caller, whose session already ended).
     */
    logout(caller: OperatorCaller | undefined): Promise<string[]> {
      return sessions.end(caller?.operator.id);
    },

    /** Refuses an unsafe request of a console session without its CSRF token or from elsewhere. */
    checkCsrf(request: Request, caller: OperatorCaller): void {
      if (caller.via !== "session") return;
      requireSameOrigin(request, "Console actions must come from the console itself");
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

export function readCookie(request: Request, name: string): string | undefined {
  const header = request.headers.get("cookie") ?? "";
  for (const part of header.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return rest.join("=");
  }
  return undefined;
}
