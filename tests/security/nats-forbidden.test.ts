import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { setupTopology } from "../../services/runtime/setup.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { type Config, parseConfig } from "../../shared/config/index.ts";
import {
  connectHub,
  type HubConnection,
  NatsAuthRefusedError,
  NatsFileError,
  NatsTlsError,
} from "../../shared/hub/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { testIndexYaml } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { type Role, type RoleNats, startRoleNats } from "./nats-roles.ts";

let roles: RoleNats;
const open: HubConnection[] = [];
const captured: (() => string)[] = [];
const indexYaml = testIndexYaml();

function configFor(role: Role, nats: Record<string, unknown>): Config {
  return parseConfig(`nats: ${JSON.stringify(nats)}\n${indexYaml}`, {}, `${role} config`);
}

async function connectAs(role: Role, extra: Record<string, unknown> = {}): Promise<HubConnection> {
  const { logger, logs } = captureLogger();
  captured.push(logs);
  const hub = await connectHub(configFor(role, roles.natsSection(role, extra)), logger, role);
  open.push(hub);
  return hub;
}

/** The first-connection error of a role's config with some nats keys changed. */
async function refusal(role: Role, extra: Record<string, unknown>): Promise<Error> {
  const { logger, logs } = captureLogger();
  captured.push(logs);
  const config = configFor(role, { ...roles.natsSection(role), ...extra });
  return connectHub(config, logger, role).then(
    async (hub) => {
      await hub.drain();
      throw new Error("connected although it should have been refused");
    },
    (err: Error) => err,
  );
}

const eventsStored = async (hub: HubConnection) =>
  (await hub.jsm.streams.info("SWITCHYARD_EVENTS")).state.messages;

beforeAll(async () => {
  roles = await startRoleNats();
  const { logger } = captureLogger();
  await setupTopology({
    config: configFor("admin", roles.natsSection("admin")),
    logger,
    clock: systemClock,
    ids: randomIds,
  });
});

afterAll(async () => {
  for (const hub of open) await hub.drain();
  await roles?.stop();
});

describe("each role is refused what it does not need", () => {
  test("the executor's user cannot append a run.requested; the ingress's can", async () => {
    const executor = await connectAs("executor");
    const before = await eventsStored(executor);
    const denied = await executor.js.publish("sy.evt.acme.J1.run", "{}").catch((e: Error) => e);
    expect(denied).toBeInstanceOf(Error);
    expect(String(denied)).toContain("Permissions Violation");
    const ingress = await connectAs("ingress");
    const ack = await ingress.js.publish("sy.evt.acme.J2.run", "{}");
    expect(ack.stream).toBe("SWITCHYARD_EVENTS");
    expect(await eventsStored(executor)).toBe(before + 1);
    // The server logs each refusal: what nats-roles.test.ts looks for after its end-to-end run.
    expect(roles.nats.server().output()).toContain('Publish Violation - User "executor"');
  });

  test("the callback's user cannot write a job view; the projector's can", async () => {
    const callback = await connectAs("callback");
    const denied = await callback.jobs.put("acme.J3", "{}").catch((e: Error) => e);
    expect(String(denied)).toContain("Permissions Violation");
    const projector = await connectAs("projector");
    expect(await projector.jobs.get("acme.J3")).toBeNull();
    await projector.jobs.put("acme.J4", "{}");
    expect((await projector.jobs.get("acme.J4"))?.string()).toBe("{}");
  });

  test("the auditor reads the stream but publishes nothing and deletes nothing", async () => {
    const auditor = await connectAs("auditor");
    const before = await eventsStored(auditor);
    for (const subject of ["sy.evt.acme.J5.job", "sy.audit.checkpoint", "sy.evt.acme.J5.run"]) {
      const denied = await auditor.js.publish(subject, "{}").catch((e: Error) => e);
      expect(String(denied)).toContain("Permissions Violation");
    }
    const deleted = await auditor.jsm.streams.delete("SWITCHYARD_EVENTS").catch((e: Error) => e);
    expect(String(deleted)).toContain("Permissions Violation");
    const consumer = await auditor.jsm.consumers
      .delete("SWITCHYARD_EVENTS", "projector")
      .catch((e: Error) => e);
    expect(String(consumer)).toContain("Permissions Violation");
    const info = await auditor.jsm.consumers.info("SWITCHYARD_EVENTS", "projector");
    const changed = await auditor.jsm.consumers
      .update("SWITCHYARD_EVENTS", "projector", { max_ack_pending: 1 })
      .catch((e: Error) => e);
    expect(String(changed)).toContain("Permissions Violation");
    const durable = await auditor.jsm.consumers
      .add("SWITCHYARD_EVENTS", { ...info.config, durable_name: "executor", name: "executor" })
      .catch((e: Error) => e);
    expect(String(durable)).toContain("Permissions Violation");
    expect(await eventsStored(auditor)).toBe(before);
  });

  test("the ingress cannot rewrite the job-id key or the store mark; the indexer not the projector's lease", async () => {
    const ingress = await connectAs("ingress");
    for (const key of ["job_id_key", "store_version", "console_session_key"]) {
      const denied = await ingress.meta.put(key, "x").catch((e: Error) => e);
      expect(String(denied)).toContain("Permissions Violation");
    }
    const indexer = await connectAs("indexer");
    const lease = await indexer.js.publish("$KV.sy_leases.projector", "x").catch((e: Error) => e);
    expect(String(lease)).toContain("Permissions Violation");
  });

  test("no service role creates, updates or deletes streams or other roles' consumers", async () => {
    for (const role of ["ingress", "executor", "callback", "projector", "indexer"] as const) {
      const hub = await connectAs(role);
      const created = await hub.jsm.streams
        .add({ name: `ROGUE_${role}`, subjects: [`rogue.${role}`] })
        .catch((e: Error) => e);
      expect(String(created)).toContain("Permissions Violation");
      const deleted = await hub.jsm.streams.delete("SWITCHYARD_EVENTS").catch((e: Error) => e);
      expect(String(deleted)).toContain("Permissions Violation");
      const consumer = await hub.jsm.consumers
        .delete("SWITCHYARD_EVENTS", "executor")
        .catch((e: Error) => e);
      expect(String(consumer)).toContain("Permissions Violation");
    }
  });
});

describe("connections that must not get in", () => {
  test("no credential: refused at once, naming nats.auth and NATS's answer", async () => {
    const err = await refusal("ingress", { auth: undefined, connect_timeout: "60s" });
    expect(err).toBeInstanceOf(NatsAuthRefusedError);
    expect(err.message).toContain("Authorization Violation");
    expect(err.message).toContain("nats.auth");
  });

  test("a wrong password: refused at once; the message never holds the password", async () => {
    const err = await refusal("ingress", {
      auth: { user: "ingress", password: "wrong-password-7f3a" },
      connect_timeout: "60s",
    });
    expect(err).toBeInstanceOf(NatsAuthRefusedError);
    expect(err.message).toContain("user ingress");
    expect(err.message).not.toContain("wrong-password-7f3a");
  });

  test("another role's user name with this role's password is refused", async () => {
    const err = await refusal("ingress", {
      auth: { user: "admin", password: roles.passwords.ingress },
    });
    expect(err).toBeInstanceOf(NatsAuthRefusedError);
  });

  test("TLS without the CA that signed the server: refused, naming nats.tls.ca_file", async () => {
    const err = await refusal("ingress", {
      tls: {
        ca_file: roles.pki.rogueCaFile,
        cert_file: roles.pki.clientCert,
        key_file: roles.pki.clientKey,
      },
      connect_timeout: "60s",
    });
    expect(err).toBeInstanceOf(NatsTlsError);
    expect(err.message).toContain("nats.tls.ca_file");
  });

  test("a server name the certificate does not carry: refused, naming nats.tls.server_name", async () => {
    const err = await refusal("ingress", {
      tls: { ...(roles.natsSection("ingress").tls as object), server_name: "elsewhere.test" },
    });
    expect(err).toBeInstanceOf(NatsTlsError);
    expect(err.message).toContain("nats.tls.server_name");
  });

  test("an unreadable certificate file stops start-up at once, naming its key", async () => {
    const err = await refusal("ingress", {
      tls: { ca_file: "/nonexistent/ca.crt" },
      connect_timeout: "60s",
    });
    expect(err).toBeInstanceOf(NatsFileError);
    expect(err.message).toContain(
      "nats.tls.ca_file: cannot read file /nonexistent/ca.crt (ENOENT)",
    );
  });

  test("a client certificate from another CA, or none, does not get in", async () => {
    const rogue = await refusal("ingress", {
      tls: {
        ca_file: roles.pki.caFile,
        cert_file: roles.pki.rogueClientCert,
        key_file: roles.pki.rogueClientKey,
      },
      connect_timeout: "2s",
    });
    expect(rogue.message).toContain("cannot reach NATS");
    const none = await refusal("ingress", {
      tls: { ca_file: roles.pki.caFile },
      connect_timeout: "2s",
    });
    expect(none.message).toContain("cannot reach NATS");
  });

  test("no log line or error names a password", () => {
    const text = captured.map((read) => read()).join("\n");
    for (const password of Object.values(roles.passwords)) expect(text).not.toContain(password);
  });
});
