/**
 * Operator credentials and console sessions (issue 16, sections 2, 4 and 5) against real hubs:
 * operator JWTs, the start-up check that keeps operator and client tokens apart, and a logout that
 * ends the operator's console sessions on every ingress replica (two ingresses on one NATS).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { exportSPKI, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { hashToken } from "../../shared/auth/index.ts";
import { ConfigError, parseConfig } from "../../shared/config/index.ts";
import {
  CLIENT_TOKENS,
  OPERATOR_TOKENS,
  type OperatorHub,
  startOperatorHub,
} from "./operator-hub.ts";

type KeyPair = Awaited<ReturnType<typeof generateKeyPair>>;

const ISSUER = "https://idp.test/operators";
const AUDIENCE = "switchyard-operators";
const now = () => Math.floor(Date.now() / 1000);

let idp: KeyPair;
let stranger: KeyPair;
/** Replica A: every service. Replica B: a second ingress on the same NATS. */
let a: OperatorHub;
let b: OperatorHub;

function sign(claims: JWTPayload = {}, key: KeyPair = idp): Promise<string> {
  const payload = { iss: ISSUER, aud: AUDIENCE, sub: "jill", iat: now(), exp: now() + 600 };
  return new SignJWT({ ...payload, ...claims })
    .setProtectedHeader({ alg: "RS256" })
    .sign(key.privateKey);
}

beforeAll(async () => {
  [idp, stranger] = await Promise.all([
    generateKeyPair("RS256", { extractable: true }),
    generateKeyPair("RS256", { extractable: true }),
  ]);
  const pem = JSON.stringify(await exportSPKI(idp.publicKey));
  const extraOperators = [
    `{ id: jill, role: viewer, jwt: { issuer: "${ISSUER}", audience: ${AUDIENCE}, subject: jill, public_key_pem: ${pem}, algorithms: [RS256] } }`,
  ];
  a = await startOperatorHub({ extraOperators });
  b = await startOperatorHub({ extraOperators, nats: a.hub.nats, services: ["ingress"] });
});
afterAll(async () => {
  await b?.stop();
  await a?.stop();
});

const session = (hub: OperatorHub, headers: Record<string, string>) =>
  fetch(`${hub.hub.baseUrl}/admin/v1/session`, { headers });

async function login(hub: OperatorHub, token: string): Promise<{ cookie: string; set: string[] }> {
  const res = await fetch(`${hub.hub.baseUrl}/console/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ token }),
  });
  expect(res.status).toBe(204);
  const set = res.headers.getSetCookie();
  return { cookie: set[0]?.split(";")[0] ?? "", set };
}

async function logout(hub: OperatorHub, cookie: string): Promise<Response> {
  const state = (await (
    await fetch(`${hub.hub.baseUrl}/console/state`, { headers: { cookie } })
  ).json()) as { csrf_token?: string };
  return fetch(`${hub.hub.baseUrl}/console/logout`, {
    method: "POST",
    headers: { cookie, "x-csrf-token": state.csrf_token ?? "" },
  });
}

describe("operator JWTs", () => {
  test("a JWT of the operator's issuer authenticates on the operator API and nowhere else", async () => {
    const token = await sign();
    const res = await a.admin("/session", token);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      operator: { id: "jill", role: "viewer", read_payloads: false },
      via: "bearer",
    });
    const onClientApi = await a.hub.request("/jobs/job_AAAAAAAAAAAAAAAAAAAAAA", { token });
    expect(onClientApi.status).toBe(401);
  });

  test("expired, not yet valid, wrong audience, issuer or subject, foreign key, no exp: 401", async () => {
    const cases: [string, Promise<string>][] = [
      ["expired beyond the tolerance", sign({ exp: now() - 120 })],
      ["not valid for 5 minutes", sign({ nbf: now() + 300 })],
      ["wrong audience", sign({ aud: "switchyard" })],
      ["wrong issuer", sign({ iss: "https://idp.test/clients" })],
      ["another subject", sign({ sub: "mallory" })],
      ["signed by another key", sign({}, stranger)],
      // Operators have no require_exp switch: a JWT that never expires is refused.
      [
        "without exp",
        new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: "jill", iat: now() })
          .setProtectedHeader({ alg: "RS256" })
          .sign(idp.privateKey),
      ],
    ];
    for (const [label, token] of cases) {
      const res = await a.admin("/session", await token);
      expect({ label, status: res.status }).toEqual({ label, status: 401 });
    }
  });

  test("a console login with a JWT is a session that ends no later than the JWT", async () => {
    const { cookie, set } = await login(a, await sign({ exp: now() + 120 }));
    for (const value of set) {
      const maxAge = Number(/Max-Age=(\d+)/.exec(value)?.[1]);
      expect(maxAge).toBeGreaterThan(0);
      expect(maxAge).toBeLessThanOrEqual(120);
    }
    const res = await session(a, { cookie });
    expect(((await res.json()) as { operator: { id: string }; via: string }).via).toBe("session");
  });
});

describe("the start-up check", () => {
  const yaml = (operatorHash: unknown) => `
nats: { url: "nats://127.0.0.1:4" }
clients:
  - id: acme
    routes: ["demo.*"]
    token_sha256: ["${hashToken(CLIENT_TOKENS.acme)}", { sha256: "${hashToken("retiring-0123456789")}", retire_at: "2030-01-01T00:00:00Z" }]
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
operators:
  - { id: ops, role: operator, token_sha256: [${JSON.stringify(operatorHash)}] }
`;

  test("an operator token that is also a client token (current or retiring) is refused", () => {
    expect(parseConfig(yaml(hashToken(OPERATOR_TOKENS.alice)), {}).operators[0]?.id).toBe("ops");
    for (const shared of [CLIENT_TOKENS.acme, "retiring-0123456789"]) {
      let caught: unknown;
      try {
        parseConfig(yaml(hashToken(shared)), {});
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ConfigError);
      expect((caught as ConfigError).issues).toContainEqual({
        key: "operators[0].token_sha256[0]",
        message: "is also a client's token: operator credentials must not be client tokens",
      });
    }
  });
});

describe("console sessions", () => {
  test("the cookie is sent only to the console and the operator API", async () => {
    const { set } = await login(a, OPERATOR_TOKENS.alice);
    expect(set.map((c) => /Path=([^;]+)/.exec(c)?.[1]).sort()).toEqual(["/admin/v1", "/console"]);
    for (const value of set) {
      expect(value).toContain("HttpOnly; SameSite=Strict; Max-Age=43200");
    }
  });

  test("logout ends every session of the operator on every replica, and nobody else's", async () => {
    const first = await login(a, OPERATOR_TOKENS.olga);
    const second = await login(b, OPERATOR_TOKENS.olga);
    const other = await login(b, OPERATOR_TOKENS.alice);
    // One hub-wide key: a session made on one replica works on the other.
    expect((await session(b, { cookie: first.cookie })).status).toBe(200);
    expect((await session(a, { cookie: second.cookie })).status).toBe(200);

    const out = await logout(a, first.cookie);
    expect(out.status).toBe(200);
    expect(out.headers.getSetCookie().map((c) => /Max-Age=(\d+)/.exec(c)?.[1])).toEqual(["0", "0"]);
    for (const [hub, cookie] of [
      [a, first.cookie],
      [b, first.cookie],
      [a, second.cookie],
      [b, second.cookie],
    ] as const) {
      const res = await session(hub, { cookie });
      expect(res.status).toBe(401);
      expect(res.headers.get("content-type")).toContain("application/problem+json");
    }
    expect((await session(b, { cookie: other.cookie })).status).toBe(200);
    expect((await session(a, { authorization: `Bearer ${OPERATOR_TOKENS.olga}` })).status).toBe(
      200,
    );
    // Logging out again (another tab) clears the cookie without a session; a new login works.
    expect((await logout(b, second.cookie)).status).toBe(200);
    const again = await login(b, OPERATOR_TOKENS.olga);
    expect((await session(a, { cookie: again.cookie })).status).toBe(200);
  });

  test("the operator's token ends its console sessions; another token cannot", async () => {
    const { cookie } = await login(a, OPERATOR_TOKENS.victor);
    const asLogout = (token: string) =>
      fetch(`${b.hub.baseUrl}/console/logout`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      });
    expect((await asLogout(CLIENT_TOKENS.acme)).status).toBe(401);
    expect((await session(a, { cookie })).status).toBe(200);
    expect((await asLogout(OPERATOR_TOKENS.victor)).status).toBe(200);
    expect((await session(a, { cookie })).status).toBe(401);
  });
});
