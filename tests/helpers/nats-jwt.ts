/**
 * A NATS operator, account and users as JWTs signed with fresh NKeys, made at test time: enough of
 * decentralised auth (operator mode, a MEMORY resolver) to start a nats-server 2.9 that accepts
 * `.creds` files. Test-only; no key is written anywhere but the test's temporary folder.
 */
import { createHash } from "node:crypto";
import { nkeys } from "@nats-io/transport-node";

type KeyPair = ReturnType<typeof nkeys.createAccount>;

const b64u = (data: Uint8Array | string) => Buffer.from(data).toString("base64url");

function sign(claims: Record<string, unknown>, signer: KeyPair): string {
  const header = b64u(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }));
  const body = { ...claims, iat: Math.floor(Date.now() / 1000) };
  const jti = createHash("sha256").update(JSON.stringify(body)).digest("base64url").slice(0, 52);
  const payload = b64u(JSON.stringify({ jti, ...body }));
  return `${header}.${payload}.${b64u(signer.sign(new TextEncoder().encode(`${header}.${payload}`)))}`;
}

const LIMITS = {
  subs: -1,
  data: -1,
  payload: -1,
  imports: -1,
  exports: -1,
  wildcards: true,
  conn: -1,
  leaf: -1,
};

function account(operator: KeyPair, key: KeyPair, name: string, jetstream: boolean): string {
  const storage = jetstream ? -1 : 0;
  const limits = {
    ...LIMITS,
    mem_storage: storage,
    disk_storage: storage,
    streams: storage,
    consumer: storage,
  };
  return sign(
    {
      iss: operator.getPublicKey(),
      sub: key.getPublicKey(),
      name,
      nats: { limits, default_permissions: { pub: {}, sub: {} }, type: "account", version: 2 },
    },
    operator,
  );
}

/** A `.creds` file's text: the user's JWT and its NKey seed. */
export function credsFile(accountKey: KeyPair, name: string): string {
  const user = nkeys.createUser();
  const jwt = sign(
    {
      iss: accountKey.getPublicKey(),
      sub: user.getPublicKey(),
      name,
      nats: { pub: {}, sub: {}, subs: -1, data: -1, payload: -1, type: "user", version: 2 },
    },
    accountKey,
  );
  const seed = new TextDecoder().decode(user.getSeed());
  return `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`;
}

export interface OperatorMode {
  /** nats-server config lines: the operator, the system account, the accounts preloaded. */
  readonly config: (operatorJwtPath: string) => string;
  readonly operatorJwt: string;
  /** The account with JetStream that users are made for. */
  readonly account: KeyPair;
}

/** An operator with a system account and one JetStream account. */
export function operatorMode(): OperatorMode {
  const operator = nkeys.createOperator();
  const sys = nkeys.createAccount();
  const acc = nkeys.createAccount();
  const operatorJwt = sign(
    {
      iss: operator.getPublicKey(),
      sub: operator.getPublicKey(),
      name: "test-operator",
      nats: { type: "operator", version: 2, system_account: sys.getPublicKey() },
    },
    operator,
  );
  const preload = {
    [acc.getPublicKey()]: account(operator, acc, "switchyard", true),
    [sys.getPublicKey()]: account(operator, sys, "SYS", false),
  };
  return {
    operatorJwt,
    account: acc,
    config: (path) =>
      [
        `operator: "${path}"`,
        `system_account: ${sys.getPublicKey()}`,
        "resolver: MEMORY",
        `resolver_preload: { ${Object.entries(preload)
          .map(([k, v]) => `${k}: "${v}"`)
          .join(", ")} }`,
      ].join("\n"),
  };
}
