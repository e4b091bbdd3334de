import { timingSafeEqual } from "node:crypto";
import {
  createRemoteJWKSet,
  decodeJwt,
  importSPKI,
  type JWTVerifyGetKey,
  jwtVerify,
  type KeyObject,
} from "jose";
import {
  activeClient,
  type ClientConfig,
  type ClientEntry,
  credential,
} from "../../shared/config/index.ts";
import { UnauthorizedError } from "../../shared/errors/index.ts";

export interface Authenticator {
  /** Resolves the calling client from an Authorization header, or throws UnauthorizedError. */
  authenticate(authorization: string | null): Promise<ClientConfig>;
  /**
   * Swaps in the clients of a reloaded configuration. Keys are imported first; requests keep
   * using the previous tables until the new ones are complete.
   */
  update(clients: readonly ClientEntry[]): Promise<void>;
}

const CHALLENGE = { "www-authenticate": 'Bearer realm="switchyard"' };

function unauthorized(detail: string): UnauthorizedError {
  return new UnauthorizedError({ detail, headers: CHALLENGE });
}

interface HashEntry {
  readonly hash: Buffer;
  /** Epoch ms from which this token is refused (Infinity: never). */
  readonly retireAtMs: number;
  readonly client: ClientEntry;
}

interface JwtEntry {
  readonly client: ClientEntry;
  readonly key: KeyObject | JWTVerifyGetKey | Uint8Array | CryptoKey;
}

interface Tables {
  readonly hashes: readonly HashEntry[];
  readonly jwtClients: readonly JwtEntry[];
}

async function buildTables(clients: readonly ClientEntry[]): Promise<Tables> {
  const hashes: HashEntry[] = clients.flatMap((client) =>
    client.token_sha256.map((entry) => {
      const { value, retireAtMs } = credential(entry, "sha256");
      return { hash: Buffer.from(value, "hex"), retireAtMs, client };
    }),
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
  return { hashes, jwtClients };
}

/**
 * Bearer authentication against configured token hashes and JWT issuers. Token hashes are compared
 * with timingSafeEqual against every entry, with no early exit, so timing says nothing about which
 * bytes matched. A hash past its retire_at no longer authenticates.
 */
export async function createAuthenticator(clients: readonly ClientEntry[]): Promise<Authenticator> {
  let tables = await buildTables(clients);

  const byToken = (token: string): ClientConfig | undefined => {
    // Bun's one-shot hash: 0.2 against 0.7 µs per request with node:crypto's createHash.
    const presented = Bun.SHA256.hash(token) as Uint8Array;
    const nowMs = Date.now();
    let found: ClientEntry | undefined;
    for (const entry of tables.hashes) {
      if (timingSafeEqual(entry.hash, presented) && nowMs < entry.retireAtMs && !found) {
        found = entry.client;
      }
    }
    return found ? activeClient(found, nowMs) : undefined;
  };

  const byJwt = async (token: string): Promise<ClientConfig | undefined> => {
    let claims: ReturnType<typeof decodeJwt>;
    try {
      claims = decodeJwt(token);
    } catch {
      return undefined;
    }
    // The unverified issuer only picks which client's key to verify with; nothing is trusted yet.
    const candidates = tables.jwtClients.filter(
      ({ client }) =>
        client.jwt?.issuer === claims.iss &&
        (client.jwt?.subject === undefined || client.jwt?.subject === claims.sub),
    );
    for (const { client, key } of candidates) {
      const jwt = client.jwt;
      if (!jwt) continue;
      try {
        const { payload } = await jwtVerify(token, key as Parameters<typeof jwtVerify>[1], {
          issuer: jwt.issuer,
          audience: jwt.audience,
          algorithms: [...jwt.algorithms],
          clockTolerance: jwt.clock_tolerance_sec,
          requiredClaims: jwt.require_exp ? ["exp"] : [],
          ...(jwt.subject === undefined ? {} : { subject: jwt.subject }),
        });
        // A token issued in the future is either a clock far off or a token minted to outlive
        // its rotation: refused beyond the same tolerance as exp and nbf (jose checks iat only
        // with maxTokenAge).
        const nowSec = Date.now() / 1000;
        if (typeof payload.iat === "number" && payload.iat > nowSec + jwt.clock_tolerance_sec) {
          continue;
        }
        return activeClient(client, Date.now());
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
    async update(clients) {
      tables = await buildTables(clients);
    },
  };
}
