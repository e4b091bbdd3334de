/**
 * A nats-server 2.9.10 configured with deploy/nats/permissions.conf (one user per role), or with
 * `switchyard permissions --partitions P`'s output for a hub of P partitions, and mutual TLS, for
 * the least-privilege tests. Passwords are random per server.
 */
import { randomBytes } from "node:crypto";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import {
  NATS_ROLES,
  natsPermissions,
  passwordVariable,
} from "../../services/cli/permissions/render.ts";
import { startNats, type TestNats } from "../helpers/nats.ts";
import { makeTestPki, type TestPki } from "../helpers/tls.ts";

/** The users of permissions.conf, as the generator writes them. */
export const ROLES = NATS_ROLES;
export type Role = (typeof ROLES)[number];

/** HTTP and health/metrics ports of a test's services: loopback, chosen by the system. */
export const LOOPBACK_PORTS = `server: { host: 127.0.0.1, port: 0 }
monitoring: { host: 127.0.0.1, port: 0 }`;

export const PERMISSIONS_CONF = resolve(import.meta.dir, "../../deploy/nats/permissions.conf");

export interface RoleNats extends AsyncDisposable {
  readonly nats: TestNats;
  /** Holds server.conf and the permissions.conf it includes (a test may edit it and reload). */
  readonly dir: string;
  readonly pki: TestPki;
  readonly passwords: Readonly<Record<Role, string>>;
  /** The `nats:` section of a config for this role (auth, mTLS, its inbox prefix). */
  natsSection(role: Role, extra?: Record<string, unknown>): Record<string, unknown>;
  stop(): Promise<void>;
}

export interface RoleNatsOptions {
  /** More environment for the server (passwords of users a test adds later). */
  readonly env?: Readonly<Record<string, string>>;
  /** The users of a hub of this many partitions (generated); default the committed P = 1 file. */
  readonly partitions?: number;
}

export async function startRoleNats(options: RoleNatsOptions = {}): Promise<RoleNats> {
  const pki = await makeTestPki();
  const dir = await mkdtemp(join(tmpdir(), "switchyard-roles-"));
  const passwords = Object.fromEntries(
    ROLES.map((r) => [r, `pw-${r}-${randomBytes(12).toString("hex")}`]),
  ) as Record<Role, string>;
  const env: Record<string, string | undefined> = { ...process.env };
  for (const r of ROLES) env[passwordVariable(r)] = passwords[r];
  Object.assign(env, options.env);
  const conf = join(dir, "server.conf");
  // nats-server resolves an include relative to the including file, as a ConfigMap mounts both.
  if (options.partitions === undefined) {
    await copyFile(PERMISSIONS_CONF, join(dir, "permissions.conf"));
  } else {
    await writeFile(join(dir, "permissions.conf"), natsPermissions(options.partitions));
  }
  await writeFile(
    conf,
    `tls {
  cert_file: "${pki.serverCert}"
  key_file: "${pki.serverKey}"
  ca_file: "${pki.caFile}"
  verify: true
}
include ./permissions.conf
# In the file, as in Kubernetes: on a reload nats-server 2.9.10 shuts JetStream down when the file
# does not enable it, and refuses a store_dir it does not name.
jetstream { store_dir: "${join(dir, "store")}" }
`,
  );
  const tls = { caFile: pki.caFile, certFile: pki.clientCert, keyFile: pki.clientKey };
  const nats = await startNats({
    args: ["-c", conf],
    storeDir: join(dir, "store"),
    jetstreamInConfig: true,
    env,
    connect: { user: "admin", pass: passwords.admin, tls, inboxPrefix: "_INBOX_admin" },
  });
  const stop = async () => {
    await nats.stop();
    await pki.remove();
    await rm(dir, { recursive: true, force: true });
  };
  return {
    nats,
    dir,
    pki,
    passwords,
    natsSection: (role, extra = {}) => ({
      url: nats.url,
      auth: { user: role, password: passwords[role] },
      tls: { ca_file: pki.caFile, cert_file: pki.clientCert, key_file: pki.clientKey },
      inbox_prefix: `_INBOX_${role}`,
      manage_topology: role === "admin",
      connect_timeout: "5s",
      ...extra,
    }),
    stop,
    [Symbol.asyncDispose]: stop,
  };
}
