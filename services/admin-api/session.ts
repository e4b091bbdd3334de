import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { KV } from "@nats-io/kv";
import { decodeJwt } from "jose";
import type { OperatorConfig, OperatorDirectory } from "../../shared/config/index.ts";
import { UnavailableError } from "../../shared/errors/index.ts";
import type { OperatorCaller } from "./auth.ts";

export const SESSION_COOKIE = "sy_console";

/**
 * Console logouts, across every ingress replica: one key per operator in sy_meta, rewritten at each
 * logout. Its KV revision is the operator's session generation; a session carries the generation
 * it was made in and ends when the key moves on. (One key per operator rather than one per
 * session: sy_meta keeps secrets and has no max_age, and per-key TTLs need NATS 2.11.)
 */
export interface SessionGenerations {
  current(operatorId: string): Promise<number>;
  bump(operatorId: string): Promise<void>;
}

export function metaSessionGenerations(
  meta: KV,
  connected: () => boolean = () => true,
): SessionGenerations {
  // Operator ids may hold '@', which KV keys may not.
  const key = (id: string) => `console_logout.${Buffer.from(id).toString("base64url")}`;
  return {
    // sy_meta is read from its stream leader, so a logout on one replica is seen by the next read
    // on any other.
    current: async (id) => {
      // Known to be away: say so at once rather than after the read's timeout (5 s).
      if (!connected()) throw new Error("NATS is disconnected");
      return (await meta.get(key(id)))?.revision ?? 0;
    },
    bump: async (id) => {
      await meta.put(key(id), new Date().toISOString());
    },
  };
}

/** Which credential an operator logged in with: a token's hash, or the JWT issuer and subject. */
function credentialOf(operator: OperatorConfig, token: string): string {
  const hash = createHash("sha256").update(token).digest("hex");
  return operator.token_sha256.includes(hash) ? hash.slice(0, 16) : "jwt";
}

/** True when the credential a session was made from is still configured for the operator. */
function credentialStillValid(operator: OperatorConfig, credential: string): boolean {
  if (credential === "jwt") return operator.jwt !== undefined;
  return operator.token_sha256.some((h) => h.startsWith(credential));
}

/**
 * When an authenticated operator credential ends, epoch ms: a JWT's exp (its signature is already
 * verified), Infinity for a hashed token, undefined for a JWT without exp.
 */
export function expiryOf(operator: OperatorConfig, token: string): number | undefined {
  if (credentialOf(operator, token) !== "jwt") return Number.POSITIVE_INFINITY;
  const { exp } = decodeJwt(token);
  return typeof exp === "number" ? exp * 1000 : undefined;
}

export const sameText = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** One Set-Cookie value of the session cookie. */
export function sessionCookie(cookie: {
  readonly value: string;
  readonly maxAgeSec: number;
  readonly path: string;
  readonly secure: boolean;
}): string {
  return [
    `${SESSION_COOKIE}=${cookie.value}`,
    `Path=${cookie.path}`,
    "HttpOnly",
    "SameSite=Strict",
    `Max-Age=${cookie.maxAgeSec}`,
    ...(cookie.secure ? ["Secure"] : []),
  ].join("; ");
}

interface SessionBody {
  /** Operator id. */
  readonly o: string;
  /** The credential logged in with (credentialOf). */
  readonly c: string;
  /** Expiry, epoch ms. */
  readonly e: number;
  /** Nonce, from which the CSRF token is derived. */
  readonly n: string;
  /** The operator's session generation at login (SessionGenerations). */
  readonly g: number;
}

export interface SessionDeps {
  /** The operators as reloaded: a removed operator's sessions end at its next request. */
  readonly operators: Pick<OperatorDirectory, "operator">;
  readonly sessionKey: Buffer;
  readonly sessionTtlMs: number;
  readonly generations: SessionGenerations;
  /** Where the session cookie is sent: the console's path and the operator API's. */
  readonly cookiePaths: readonly string[];
  readonly secureCookie: boolean;
  readonly now: () => number;
}

/**
 * Console sessions: a cookie signed with the hub-wide key, valid until it expires, its operator
 * logs out (on any replica), or its credential is removed from the config.
 */
export function createSessions(deps: SessionDeps) {
  const sign = (text: string) =>
    createHmac("sha256", deps.sessionKey).update(text).digest("base64url");
  const cookies = (value: string, maxAgeSec: number) =>
    deps.cookiePaths.map((path) =>
      sessionCookie({ value, maxAgeSec, path, secure: deps.secureCookie }),
    );
  /** The operator's session generation; 503 when sy_meta cannot be read (nothing is assumed). */
  const generationOf = async (operatorId: string): Promise<number> => {
    try {
      return await deps.generations.current(operatorId);
    } catch {
      throw new UnavailableError({
        detail:
          "The console session could not be checked: the event store is unreachable; retry shortly.",
        headers: { "retry-after": "2" },
      });
    }
  };

  return {
    /** The caller of a session cookie; undefined for a forged, expired or ended session. */
    async read(cookie: string): Promise<OperatorCaller | undefined> {
      const [body, mac] = cookie.split(".");
      if (!body || !mac || !sameText(sign(body), mac)) return undefined;
      let parsed: SessionBody;
      try {
        parsed = JSON.parse(Buffer.from(body, "base64url").toString()) as SessionBody;
      } catch {
        return undefined;
      }
      const operator = deps.operators.operator(parsed.o);
      if (!operator || parsed.e <= deps.now() || !credentialStillValid(operator, parsed.c)) {
        return undefined;
      }
      // Sessions signed before logouts were recorded carry no generation: they end too.
      if (typeof parsed.g !== "number" || parsed.g !== (await generationOf(operator.id))) {
        return undefined;
      }
      return { operator, via: "session", csrf: sign(`csrf:${parsed.n}`) };
    },

    /**
     * A new session of an authenticated operator credential: its Set-Cookie values, one per
     * cookie path. A session made from a JWT ends when the JWT does, if that is sooner.
     */
    async issue(operator: OperatorConfig, token: string): Promise<string[]> {
      const now = deps.now();
      const expires = Math.min(now + deps.sessionTtlMs, expiryOf(operator, token) ?? now);
      const body: SessionBody = {
        o: operator.id,
        c: credentialOf(operator, token),
        e: expires,
        n: randomBytes(16).toString("base64url"),
        g: await generationOf(operator.id),
      };
      const text = Buffer.from(JSON.stringify(body)).toString("base64url");
      return cookies(`${text}.${sign(text)}`, Math.max(0, Math.floor((expires - now) / 1000)));
    },

    /**
     * Ends every console session of an operator, on every replica (a new session generation);
     * the Set-Cookie values that clear the cookie. Without an operator (its session already
     * ended) only the latter.
     */
    async end(operatorId: string | undefined): Promise<string[]> {
      try {
        if (operatorId !== undefined) await deps.generations.bump(operatorId);
      } catch {
        throw new UnavailableError({ detail: "The logout could not be recorded; retry." });
      }
      return cookies("", 0);
    },
  };
}
