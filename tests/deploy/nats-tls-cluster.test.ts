import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import { type RunningHub, SERVICE_NAMES, startServices } from "../../services/runtime/run.ts";
import { setupTopology } from "../../services/runtime/setup.ts";
import { hashToken } from "../../shared/auth/index.ts";
import { TOPOLOGY } from "../../shared/bus/index.ts";
import { systemClock } from "../../shared/clock/index.ts";
import { type Config, parseConfig } from "../../shared/config/index.ts";
import { randomIds } from "../../shared/ids/index.ts";
import { type ManagedNatsServer, startNatsServer } from "../../shared/nats/index.ts";
import { testIndexYaml } from "../helpers/hub.ts";
import { captureLogger } from "../helpers/logs.ts";
import { makeTestPki, type TestPki } from "../helpers/tls.ts";
import { waitFor } from "../helpers/wait.ts";
import { LOOPBACK_PORTS } from "../security/nats-roles.ts";
import { byKind, K8S, readText, render } from "./k8s.ts";

// The prod overlay's nats.conf and permissions.conf as three nats-server 2.9.10 nodes on loopback:
// mTLS on client and route connections, one user per role, R3 streams made by `switchyard setup`,
// and every service under its own user. Only addresses and file paths are changed.

const TEST_MS = 120_000;
const TOKEN = "acme-token-0123456789abcdef";
const ROLES = ["admin", "ingress", "projector", "indexer", "executor", "callback"] as const;
const passwords = Object.fromEntries(ROLES.map((r) => [r, `pw-${r}-${Math.random()}`]));
let pki: TestPki;
let dir: string;
const nodes: ManagedNatsServer[] = [];
const running: RunningHub[] = [];
let clusterPorts: number[] = [];

/**
 * The INFO line of a nats-server port: over plain TCP (a client port sends it before TLS), or
 * after a TLS handshake with this test's CA and client certificate (a route port speaks TLS first).
 */
async function firstInfo(port: number, overTls = false): Promise<Record<string, unknown>> {
  const socket = overTls
    ? tlsConnect({
        host: "127.0.0.1",
        port,
        ca: readText(pki.caFile),
        cert: readText(pki.serverCert),
        key: readText(pki.serverKey),
      })
    : connect({ host: "127.0.0.1", port });
  let text = "";
  socket.on("data", (chunk) => {
    text += chunk.toString();
  });
  try {
    const line = await waitFor("the INFO line", () =>
      text.includes("\r\n") ? text.slice(0, text.indexOf("\r\n")) : undefined,
    );
    return JSON.parse(line.replace(/^INFO /, "")) as Record<string, unknown>;
  } finally {
    socket.destroy();
  }
}

async function freePort(): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function shipped(name: string, file: string): string {
  const cm = byKind<IConfigMap>(render("overlays/prod"), "ConfigMap").find((c) =>
    c.metadata?.name?.startsWith(`${name}-`),
  );
  const text = cm?.data?.[file];
  if (!text) throw new Error(`no ${name} ConfigMap with ${file}`);
  return text;
}

function configFor(role: (typeof ROLES)[number], urls: string): Config {
  const nats = {
    url: urls,
    replicas: 3,
    auth: { user: role, password: passwords[role] },
    tls: { ca_file: pki.caFile, cert_file: pki.clientCert, key_file: pki.clientKey },
    inbox_prefix: `_INBOX_${role}`,
    manage_topology: false,
  };
  return parseConfig(
    `${LOOPBACK_PORTS}
nats: ${JSON.stringify(nats)}
clients:
  - id: acme
    token_sha256: ["${hashToken(TOKEN)}"]
    routes: ["demo.*"]
routes:
  - key: demo.echo
    executor: { kind: builtin, name: echo }
${testIndexYaml()}`,
    {},
    `${role} config`,
  );
}

beforeAll(async () => {
  pki = await makeTestPki();
  dir = await mkdtemp(join(tmpdir(), "switchyard-tls-cluster-"));
  clusterPorts = [await freePort(), await freePort(), await freePort()];
  const env: Record<string, string | undefined> = { ...process.env };
  for (const r of ["ADMIN", "INGRESS", "PROJECTOR", "INDEXER", "EXECUTOR", "CALLBACK"]) {
    env[`SY_${r}_PASSWORD`] = passwords[r.toLowerCase()];
  }
  env.SY_READ_MODELS_PASSWORD = "unused-read-models";
  env.SY_WORKER_PASSWORD = "unused-worker";
  env.SY_AUDITOR_PASSWORD = "unused-auditor";
  const conf = shipped("nats-config", "nats.conf");
  const permissions = shipped("nats-permissions", "permissions.conf");
  expect(permissions).toBe(readText(join(K8S, "../nats/permissions.conf")));
  await Promise.all(
    [0, 1, 2].map(async (i) => {
      const node = join(dir, `nats-${i}`);
      await mkdir(join(node, "tls"), { recursive: true });
      await copyFile(pki.caFile, join(node, "tls", "ca.crt"));
      await copyFile(pki.serverCert, join(node, "tls", "tls.crt"));
      await copyFile(pki.serverKey, join(node, "tls", "tls.key"));
      await writeFile(join(node, "permissions.conf"), permissions);
      const text = conf
        .replace("listen: 0.0.0.0:6222", `listen: 127.0.0.1:${clusterPorts[i]}`)
        .replace(/nats:\/\/nats-(\d)\.nats-headless:6222/g, (_, n: string) => {
          return `nats://127.0.0.1:${clusterPorts[Number(n)]}`;
        })
        .replaceAll("/etc/nats-tls/", `${join(node, "tls")}/`)
        .replaceAll("/etc/nats-routes-tls/", `${join(node, "tls")}/`)
        .replace("store_dir: /data", `store_dir: "${join(node, "store")}"`)
        .replace("pid_file: /var/run/nats/nats.pid", `pid_file: "${join(node, "nats.pid")}"`)
        .replace("http_port: 8222", `http_port: ${await freePort()}`);
      await writeFile(join(node, "nats.conf"), text);
      nodes[i] = await startNatsServer({
        storeDir: join(node, "store"),
        jetstreamInConfig: true,
        args: ["-c", join(node, "nats.conf")],
        env: { ...env, SERVER_NAME: `nats-${i}` },
        startTimeoutMs: 30_000,
      });
    }),
  );
}, TEST_MS);

afterAll(async () => {
  for (const hub of running.reverse()) await hub.stop().catch(() => {});
  await Promise.all(nodes.map((n) => n?.stop("SIGKILL")));
  await pki?.remove();
  if (dir) await rm(dir, { recursive: true, force: true });
}, TEST_MS);

describe("the shipped NATS cluster config: mTLS routes, one user per role, R3", () => {
  test(
    "setup makes R3 streams over TLS routes; every service runs under its own user; a run is done",
    async () => {
      const urls = nodes.map((n) => n.url).join(",");
      const { logger } = captureLogger();
      // The meta leader is elected over the TLS routes; setup retries until JetStream answers.
      await waitFor(
        "setup to succeed once the cluster has a meta leader",
        async () => {
          await setupTopology({
            config: configFor("admin", urls),
            logger,
            clock: systemClock,
            ids: randomIds,
          });
          return true;
        },
        { timeoutMs: 60_000, intervalMs: 1_000 },
      );
      for (const node of nodes) expect(node.output()).toContain("Route connection created");
      // Routes answer only after a TLS handshake with a certificate of the CA; clients are told
      // that TLS and a user are required before anything else.
      for (const port of clusterPorts) {
        expect(await firstInfo(port, true)).toMatchObject({ tls_required: true });
      }
      expect(await firstInfo(nodes[0]?.port ?? 0)).toMatchObject({
        tls_required: true,
        auth_required: true,
      });
      for (const service of SERVICE_NAMES) {
        const { logger: serviceLogger } = captureLogger();
        running.push(
          await startServices([service], {
            config: configFor(service, urls),
            logger: serviceLogger,
            clock: systemClock,
            ids: randomIds,
          }),
        );
      }
      const ingress = running.find((r) => r.ingress)?.ingress?.url ?? "";
      const info = await running[0]?.hub.jsm.streams.info(TOPOLOGY.eventsStream);
      expect(info?.config.num_replicas).toBe(3);
      const res = await fetch(`${ingress}/run`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify({ request_id: "r3-tls-1", route: "demo.echo", input: "over tls" }),
      });
      expect(res.status).toBe(202);
      const jobId = ((await res.json()) as { job_id: string }).job_id;
      const view = await waitFor(
        "the job to be done",
        async () => {
          const r = await fetch(`${ingress}/jobs/${jobId}`, {
            headers: { authorization: `Bearer ${TOKEN}` },
          });
          const body = (await r.json()) as { status?: string; output?: unknown };
          return body.status === "done" ? body : undefined;
        },
        { timeoutMs: 20_000 },
      );
      expect(view.output).toBe("over tls");
      for (const node of nodes) expect(node.output()).not.toContain("Violation");
    },
    TEST_MS,
  );
});
