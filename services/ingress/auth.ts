import { createHash, timingSafeEqual } from "node:crypto";
import {
  createRemoteJWKSet,
  decodeJwt,
  importSPKI,
  type JWTVerifyGetKey,
  jwtVerify,
  type KeyObject,
} from "jose";
import type { ClientConfig } from "../../shared/config/index.ts";
import { UnauthorizedError } from "../../shared/errors/index.ts";

export interface Authenticator {
  /** Resolves the calling client from an Authorization header, or throws UnauthorizedError. */
  authenticate(authorization: string | null): Promise<ClientConfig>;
}

const CHALLENGE = { "www-authenticate": 'Bearer realm="switchyard"' };

function unauthorized(detail: string): UnauthorizedError {
  return new UnauthorizedError({ detail, headers: CHALLENGE });
}

interface HashEntry {
  readonly hash: Buffer;
  readonly client: ClientConfig;
}

interface JwtEntry {
  readonly client: ClientConfig;
  readonly key: KeyObject | JWTVerifyGetKey | Uint8Array | CryptoKey;
}

/**
 * Bearer authentication against configured token hashes and JWT issuers. Token hashes are compared
 * with timingSafeEqual against every entry, with no early exit, so timing says nothing about which
 * bytes matched.
 */
export async function createAuthenticator(
  clients: readonly ClientConfig[],
): Promise<Authenticator> {
  const hashes: HashEntry[] = clients.flatMap((client) =>
    client.token_sha256.map((hex) => ({ hash: Buffer.from(hex, "hex"), client })),
  );
  const jwtClients: JwtEntry[] = [];
  for (const client of clients) {
    const jwt = client.jwt;
    if (!jwt) continue;
    const key = jwt.jwks_url
      ? createRemoteJWKSet(new URL(jwt.jwks_url))
      : await importSPKI(jwt.public_key_pem ?? "", jwt.algorithms[0] ?? "RS256");
    jwtClients.push({ client, key });
  }

  const byToken = (token: string): ClientConfig | undefined => {
    const presented = createHash("sha256").update(token).digest();
    let found: ClientConfig | undefined;
    for (const entry of hashes) {
      if (timingSafeEqual(entry.hash, presented) && found === undefined) found = entry.client;
    }
    return found;
  };

  const byJwt = async (token: string): Promise<ClientConfig | undefined> => {
    let claims: ReturnType<typeof decodeJwt>;
    try {
      claims = decodeJwt(token);
    } catch {
      return undefined;
    }
    // The unverified issuer only picks which client's key to verify with; nothing is trusted yet.
    const candidates = jwtClients.filter(
      ({ client }) =>
        client.jwt?.issuer === claims.iss &&
        (client.jwt?.subject === undefined || client.jwt?.subject === claims.sub),
    );
    for (const { client, key } of candidates) {
      const jwt = client.jwt;
      if (!jwt) continue;
      try {
        await jwtVerify(token, key as Parameters<typeof jwtVerify>[1], {
          issuer: jwt.issuer,
          audience: jwt.audience,
          algorithms: [...jwt.algorithms],
          clockTolerance: jwt.clock_tolerance_sec,
          ...(jwt.subject === undefined ? {} : { subject: jwt.subject }),
        });
        return client;
      } catch {
        // Try the next client with this issuer; the caller answers 401 if none verifies.
      }
    }
    return undefined;
  };

  return {
    async authenticate(authorization) {
      if (!authorization) throw unauthorized("Send Authorization: Bearer <token>.");
      const match = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(authorization);
      if (!match?.[1]) throw unauthorized("The Authorization header must be 'Bearer <token>'.");
      const token = match[1];
      const client =
        byToken(token) ?? (token.split(".").length === 3 ? await byJwt(token) : undefined);
      if (!client) throw unauthorized("The bearer token is not valid.");
      return client;
    },
  };
}
