import { afterAll, beforeAll, describe, expect, setSystemTime, test } from "bun:test";
import { exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";
import { ConfigError, parseConfig } from "../../shared/config/index.ts";
import { type SecurityHub, startSecurityHub } from "./hub.ts";
import { expectProblem } from "./problem.ts";

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

const ISSUER = "https://idp.test/";
const AUDIENCE = "switchyard";
const JWKS_CLIENT = { id: "jwks-co", token: "jwks-co-opaque-token-0123456789" };
const PEM_CLIENT = { id: "pem-co", token: "pem-co-opaque-token-0123456789" };
/** Accepts tokens without exp on purpose (jwt.require_exp: false). */
const LONG_CLIENT = { id: "long-co", token: "long-co-opaque-token-0123456789" };

let k1: KeyPair;
let k2: KeyPair;
let pemKey: KeyPair;
let published: JWK[] = [];
let jwksFetches = 0;
let jwks: ReturnType<typeof Bun.serve>;
let hub: SecurityHub;

async function publicJwk(pair: KeyPair, kid: string): Promise<JWK> {
  return { ...(await exportJWK(pair.publicKey)), kid, alg: "RS256", use: "sig" };
}

const now = () => Math.floor(Date.now() / 1000);

async function sign(
  pair: KeyPair,
  kid: string | undefined,
  claims: JWTPayload = {},
  issuer = ISSUER,
): Promise<string> {
  const payload = { iss: issuer, aud: AUDIENCE, sub: "svc", iat: now(), exp: now() + 3600 };
  return await new SignJWT({ ...payload, ...claims })
    .setProtectedHeader(kid === undefined ? { alg: "RS256" } : { alg: "RS256", kid })
    .sign(pair.privateKey);
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** GET of an unknown job: 404 proves the token authenticated, 401 that it did not. */
const status = async (token: string) =>
  (
    await fetch(`${hub.baseUrl}/jobs/job_AAAAAAAAAAAAAAAAAAAAAA`, {
      headers: { authorization: `Bearer ${token}` },
    })
  ).status;

beforeAll(async () => {
  [k1, k2, pemKey] = await Promise.all([
    generateKeyPair("RS256", { extractable: true }),
    generateKeyPair("RS256", { extractable: true }),
    generateKeyPair("RS256", { extractable: true }),
  ]);
  published = [await publicJwk(k1, "k1")];
  jwks = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => {
      jwksFetches++;
      return Response.json({ keys: published });
    },
  });
  hub = await startSecurityHub({
    clients: [JWKS_CLIENT, PEM_CLIENT, LONG_CLIENT],
    // The refusals below are failed authentications; keep them under the per-address limit.
    server: { auth_failures_per_minute: 10_000 },
    clientYaml: {
      [JWKS_CLIENT.id]: `jwt: { issuer: "${ISSUER}", audience: ${AUDIENCE}, jwks_url: "http://127.0.0.1:${jwks.port}/jwks.json", algorithms: [RS256] }`,
      [PEM_CLIENT.id]: `jwt: { issuer: "${ISSUER}pem", audience: ${AUDIENCE}, public_key_pem: "\${PEM}", algorithms: [RS256] }`,
      [LONG_CLIENT.id]: `jwt: { issuer: "${ISSUER}long", audience: ${AUDIENCE}, public_key_pem: "\${PEM}", algorithms: [RS256], require_exp: false }`,
    },
    env: { PEM: await exportSPKI(pemKey.publicKey) },
  });
});
afterAll(async () => {
  setSystemTime();
  await hub?.stop();
  await jwks?.stop(true);
});

describe("JWT verification refuses what it must", () => {
  test("a correct token is accepted (the baseline for every refusal below)", async () => {
    expect(await status(await sign(k1, "k1"))).toBe(404);
    expect(await status(await sign(pemKey, undefined, {}, `${ISSUER}pem`))).toBe(404);
  });

  test("alg none is refused, with and without a signature part", async () => {
    const claims = { iss: ISSUER, aud: AUDIENCE, sub: "svc", exp: now() + 3600 };
    for (const header of [{ alg: "none" }, { alg: "none", kid: "k1" }, { alg: "None" }]) {
      const unsigned = `${b64url(header)}.${b64url(claims)}.`;
      const res = await fetch(`${hub.baseUrl}/jobs/job_AAAAAAAAAAAAAAAAAAAAAA`, {
        headers: { authorization: `Bearer ${unsigned}x` },
      });
      await expectProblem(res, 401, "unauthorized");
      expect(await status(unsigned.slice(0, -1))).toBe(401);
    }
  });

  test("HS256 signed with the RSA public key as HMAC secret is refused (key confusion)", async () => {
    const pem = await exportSPKI(pemKey.publicKey);
    const jwk = JSON.stringify(await publicJwk(k1, "k1"));
    for (const [secret, iss, kid] of [
      [pem, `${ISSUER}pem`, undefined],
      [pem.trim(), `${ISSUER}pem`, undefined],
      [jwk, ISSUER, "k1"],
    ] as const) {
      const forged = await new SignJWT({ iss, aud: AUDIENCE, sub: "svc" })
        .setProtectedHeader(kid === undefined ? { alg: "HS256" } : { alg: "HS256", kid })
        .setExpirationTime(now() + 3600)
        .sign(new TextEncoder().encode(secret));
      expect(await status(forged)).toBe(401);
    }
  });

  test("HMAC algorithms cannot even be configured", () => {
    const yaml = `clients:\n  - id: x\n    routes: ["*"]\n    jwt: { issuer: i, audience: a, public_key_pem: k, algorithms: [HS256] }`;
    expect(() => parseConfig(yaml, {})).toThrow(ConfigError);
  });

  test("expired, not yet valid, wrong issuer, wrong audience, foreign key: all 401", async () => {
    const cases: [string, Promise<string>][] = [
      ["expired beyond the 30 s tolerance", sign(k1, "k1", { exp: now() - 120 })],
      ["not valid for another 5 minutes", sign(k1, "k1", { nbf: now() + 300 })],
      ["wrong issuer", sign(k1, "k1", {}, "https://evil.test/")],
      ["wrong audience", sign(k1, "k1", { aud: "someone-else" })],
      ["another key under a published kid", sign(k2, "k1")],
      ["issuer of the PEM client, signed with the JWKS key", sign(k1, "k1", {}, `${ISSUER}pem`)],
    ];
    for (const [label, token] of cases) {
      expect({ label, status: await status(await token) }).toEqual({ label, status: 401 });
    }
    // Inside the clock tolerance the token is still good.
    expect(await status(await sign(k1, "k1", { exp: now() - 5 }))).toBe(404);
  });
});

describe("one test per claim rule (30 s tolerance)", () => {
  /** A token of the PEM client with exactly these claims (no defaults for exp and iat). */
  const exact = (claims: JWTPayload, issuer = `${ISSUER}pem`) =>
    new SignJWT({ iss: issuer, aud: AUDIENCE, sub: "svc", ...claims })
      .setProtectedHeader({ alg: "RS256" })
      .sign(pemKey.privateKey);
  const rules: [string, JWTPayload, number][] = [
    ["exp is required", { iat: now() }, 401],
    ["exp in the past beyond the tolerance", { exp: now() - 31 - 5 }, 401],
    ["exp in the past within the tolerance", { exp: now() - 20 }, 404],
    ["exp as a string is no date", { exp: String(now() + 60) as unknown as number }, 401],
    ["nbf in the future beyond the tolerance", { exp: now() + 600, nbf: now() + 60 }, 401],
    ["nbf in the future within the tolerance", { exp: now() + 600, nbf: now() + 20 }, 404],
    ["iat in the future beyond the tolerance", { exp: now() + 600, iat: now() + 60 }, 401],
    ["iat in the future within the tolerance", { exp: now() + 600, iat: now() + 20 }, 404],
    ["iat long ago is fine while exp holds", { exp: now() + 600, iat: now() - 86_400 }, 404],
    ["iat as a string is no date", { exp: now() + 600, iat: "soon" as unknown as number }, 401],
    ["aud must match", { exp: now() + 600, aud: "other" }, 401],
    ["aud may be a list holding ours", { exp: now() + 600, aud: ["other", AUDIENCE] }, 404],
  ];
  for (const [rule, claims, expected] of rules) {
    test(rule, async () => {
      expect(await status(await exact(claims))).toBe(expected);
    });
  }

  test("iss must match a configured issuer", async () => {
    expect(await status(await exact({ exp: now() + 600 }, "https://idp.test/other"))).toBe(401);
  });

  test("jwt.require_exp: false accepts a token without exp, and still refuses an expired one", async () => {
    expect(await status(await exact({ iat: now() }, `${ISSUER}long`))).toBe(404);
    expect(await status(await exact({ exp: now() - 120 }, `${ISSUER}long`))).toBe(401);
    expect(await status(await exact({ iat: now() + 120 }, `${ISSUER}long`))).toBe(401);
  });

  test("the tolerance is bounded: above 300 s the config is refused", () => {
    const yaml = `clients:\n  - id: x\n    routes: ["*"]\n    jwt: { issuer: i, audience: a, public_key_pem: k, algorithms: [RS256], clock_tolerance_sec: 301 }`;
    expect(() => parseConfig(yaml, {})).toThrow(/clock_tolerance_sec/);
  });
});

describe("JWKS key rotation (jose createRemoteJWKSet)", () => {
  test("a new kid is refetched once the 30 s cooldown has passed; a removed key stays cached until then", async () => {
    const fetchesBefore = jwksFetches;
    expect(await status(await sign(k1, "k1"))).toBe(404);
    // The IdP rotates: k2 replaces k1.
    published = [await publicJwk(k2, "k2")];
    const withK2 = await sign(k2, "k2");
    // Within jose's cooldown (30 s after the last fetch) an unknown kid does not refetch: 401.
    expect(await status(withK2)).toBe(401);
    // ...and the removed k1 is still trusted from the cache (up to cacheMaxAge, 10 minutes).
    expect(await status(await sign(k1, "k1"))).toBe(404);
    expect(jwksFetches).toBeLessThanOrEqual(fetchesBefore + 1);
    // Move the process clock past the cooldown (jose reads Date.now()); no real waiting.
    setSystemTime(new Date(Date.now() + 31_000));
    const fetchesAtRotation = jwksFetches;
    expect(await status(await sign(k2, "k2"))).toBe(404);
    expect(jwksFetches).toBe(fetchesAtRotation + 1);
    // After that refetch the old key is gone.
    expect(await status(await sign(k1, "k1"))).toBe(401);
    setSystemTime();
  });
});
