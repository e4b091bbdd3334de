/**
 * The NATS connect options that carry a service's identity: its credential (nats.auth), TLS with
 * a CA and a client certificate (nats.tls), and its reply-inbox prefix. Secrets arrive already
 * substituted from files or the environment (shared/config/load.ts); nothing here logs them.
 */
import { readFileSync } from "node:fs";
import {
  type ConnectionOptions,
  credsAuthenticator,
  nkeyAuthenticator,
  type TlsOptions,
} from "@nats-io/transport-node";
import type { Config } from "../config/index.ts";

type NatsSettings = Pick<Config["nats"], "auth" | "tls" | "inbox_prefix">;

/** The part of nats.js's connect options that says who this connection is. */
export type IdentityOptions = Pick<
  ConnectionOptions,
  "user" | "pass" | "token" | "authenticator" | "tls" | "inboxPrefix"
>;

function authOptions(auth: NatsSettings["auth"]): IdentityOptions {
  if (!auth) return {};
  if (auth.user !== undefined) return { user: auth.user, pass: auth.password ?? "" };
  if (auth.token !== undefined) return { token: auth.token };
  if (auth.nkey_seed !== undefined) {
    return { authenticator: nkeyAuthenticator(new TextEncoder().encode(auth.nkey_seed.trim())) };
  }
  if (auth.creds_file !== undefined) {
    const path = auth.creds_file;
    // Read at every (re)connect: a rotated .creds file is picked up without a restart.
    return { authenticator: credsAuthenticator(() => new Uint8Array(readFileSync(path))) };
  }
  return {};
}

function tlsOptions(tls: NatsSettings["tls"]): IdentityOptions {
  if (!tls) return {};
  // nats.js passes unknown keys through to node:tls, so servername overrides the URL's host.
  const options: TlsOptions & { servername?: string } = {
    ...(tls.ca_file ? { caFile: tls.ca_file } : {}),
    ...(tls.cert_file ? { certFile: tls.cert_file } : {}),
    ...(tls.key_file ? { keyFile: tls.key_file } : {}),
    ...(tls.server_name ? { servername: tls.server_name } : {}),
  };
  return { tls: options };
}

/** nats.auth, nats.tls and nats.inbox_prefix as nats.js connect options. */
export function identityOptions(nats: NatsSettings): IdentityOptions {
  return {
    ...authOptions(nats.auth),
    ...tlsOptions(nats.tls),
    ...(nats.inbox_prefix ? { inboxPrefix: nats.inbox_prefix } : {}),
  };
}

/** A NATS URL list fit for logs and errors: `user:password@` or `token@` become `***@`. */
export function redactUrl(urls: string): string {
  return urls.replace(/\/\/[^/@,]*@/g, "//***@");
}
