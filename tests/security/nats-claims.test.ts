/**
 * Partition claims under `switchyard permissions --partitions 4` (nats-server 2.9.10, one user per role):
 * the projector and the indexer users each renew a member record in sy_leases and claim their own
 * group's partitions in sy_claims, both buckets made by the admin as `switchyard setup` does,
 * without one Violation in the server's log; neither may write the other's claims.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import {
  createPartitionClaims,
  openClaimsBucket,
  openLeaseBucket,
  type PartitionClaims,
} from "../../shared/lease/index.ts";
import { captureLogger } from "../helpers/logs.ts";
import { waitFor } from "../helpers/wait.ts";
import { type RoleNats, startRoleNats } from "./nats-roles.ts";

const P = 4;
let roles: RoleNats;
const open: NatsConnection[] = [];

async function connectAs(role: "admin" | "projector" | "indexer"): Promise<NatsConnection> {
  const { pki } = roles;
  const nc = await connect({
    servers: roles.nats.url,
    user: role,
    pass: roles.passwords[role],
    tls: { caFile: pki.caFile, certFile: pki.clientCert, keyFile: pki.clientKey },
    inboxPrefix: `_INBOX_${role}`,
  });
  open.push(nc);
  return nc;
}

async function member(role: "projector" | "indexer"): Promise<PartitionClaims> {
  const nc = await connectAs(role);
  const claims = createPartitionClaims({
    leases: await openLeaseBucket(nc, { replicas: 1 }),
    jsm: await jetstreamManager(nc),
    claims: await openClaimsBucket(nc, { replicas: 1 }),
    groups: { [role]: P },
    holder: `${role}-test`,
    logger: captureLogger().logger,
  });
  for (let p = 0; p < P; p++) {
    await claims.lease(role, p).start({ lead: async () => {}, standDown: async () => {} });
  }
  return claims;
}

beforeAll(async () => {
  roles = await startRoleNats({ partitions: P });
  // What setup makes with the admin credential: the roles may only bind to them.
  const admin = await connectAs("admin");
  await openLeaseBucket(admin, { replicas: 1 });
  await openClaimsBucket(admin, { replicas: 1 });
});

afterAll(async () => {
  for (const nc of open) await nc.close();
  await roles?.stop();
});

test("the projector and indexer users claim their partitions with no Violation", async () => {
  const projector = await member("projector");
  const indexer = await member("indexer");
  await waitFor(
    "the projector holds every partition",
    () => projector.held("projector").length === P,
  );
  await waitFor("the indexer holds every partition", () => indexer.held("indexer").length === P);
  await projector.stop();
  await indexer.stop();
  expect(roles.nats.server().output()).not.toContain("Violation");
});

test("the projector user may not write the indexer's claims", async () => {
  const nc = await connectAs("projector");
  const claims = await openClaimsBucket(nc, { replicas: 1 });
  const denied = await claims.put("indexer.p0", "{}").catch((err: unknown) => err);
  expect(String(denied)).toContain("Permissions Violation");
});
