import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { copyFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { IStatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import { NATS_ROLES, passwordVariable } from "../../services/cli/permissions/render.ts";
import { findNatsServerBinary } from "../../shared/nats/index.ts";
import { makeTestPki, type TestPki } from "../helpers/tls.ts";
import { byKind, K8S, named, OVERLAYS, readText, render } from "./k8s.ts";

// The NATS config files are checked by nats-server itself (`-t`: parse and exit, binds nothing).
// The local binary is 2.9.10, so the configs use only options that 2.9 already knows; a config
// option newer than that would need this check to run against a newer binary.

function natsConf(overlay: (typeof OVERLAYS)[number]): string {
  const cm = byKind<IConfigMap>(render(overlay), "ConfigMap").find((c) =>
    c.metadata?.name?.startsWith("nats-config-"),
  );
  const text = cm?.data?.["nats.conf"];
  if (!text) throw new Error(`${overlay}: no nats-config ConfigMap with nats.conf`);
  return text;
}

function seconds(conf: string, key: string): number {
  const m = new RegExp(`^${key}:\\s*(\\d+)s\\s*$`, "m").exec(conf);
  if (!m) throw new Error(`nats.conf has no ${key}`);
  return Number(m[1]);
}

let pki: TestPki;
let dir: string;
beforeAll(async () => {
  pki = await makeTestPki();
  dir = await mkdtemp(join(tmpdir(), "switchyard-nats-conf-"));
  // The certificate Secrets as the StatefulSet mounts them (ca.crt, tls.crt, tls.key).
  for (const sub of ["nats-tls", "nats-routes-tls"]) {
    await mkdir(join(dir, sub));
    await copyFile(pki.caFile, join(dir, sub, "ca.crt"));
    await copyFile(pki.serverCert, join(dir, sub, "tls.crt"));
    await copyFile(pki.serverKey, join(dir, sub, "tls.key"));
  }
  await copyFile(join(K8S, "base/permissions.conf"), join(dir, "permissions.conf"));
});
afterAll(async () => {
  await pki?.remove();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The passwords permissions.conf reads from the environment (the switchyard-nats-users Secret). */
const PASSWORDS = Object.fromEntries(NATS_ROLES.map((r) => [passwordVariable(r), `pw-${r}`]));

/** `nats-server -t` of a config laid out as in the pod: permissions.conf beside it, the certificates. */
async function natsCheck(text: string) {
  const path = join(dir, `check-${Math.random().toString(36).slice(2)}.conf`);
  await Bun.write(
    path,
    text
      .replaceAll("/etc/nats-tls/", `${join(dir, "nats-tls")}/`)
      .replaceAll("/etc/nats-routes-tls/", `${join(dir, "nats-routes-tls")}/`),
  );
  const run = Bun.spawnSync([findNatsServerBinary(process.env), "-t", "-c", path], {
    env: { ...process.env, SERVER_NAME: "nats-0", ...PASSWORDS },
    stdout: "pipe",
    stderr: "pipe",
  });
  return { code: run.exitCode, out: `${run.stdout.toString()}${run.stderr.toString()}` };
}

describe("nats-server config files", () => {
  test.each(["base/nats.conf", "overlays/dev/nats.conf"])(
    "%s is accepted by nats-server -t",
    async (file) => {
      const { code, out } = await natsCheck(readText(join(K8S, file)));
      expect(out).toContain("is valid");
      expect(code).toBe(0);
    },
  );

  test("nats-server -t does reject an unknown option (the check above can fail)", async () => {
    const { code, out } = await natsCheck(
      `${readText(join(K8S, "base/nats.conf"))}\nno_such_option: 1\n`,
    );
    expect(code).not.toBe(0);
    expect(out).toContain("no_such_option");
  });

  test("the users and permissions shipped to Kubernetes are deploy/nats/permissions.conf", () => {
    expect(readText(join(K8S, "base/permissions.conf"))).toBe(
      readText(join(K8S, "../nats/permissions.conf")),
    );
  });

  test.each(OVERLAYS)(
    "%s: NATS wants a user; mTLS for clients and routes except in dev",
    (overlay) => {
      const conf = natsConf(overlay);
      expect(conf).toMatch(/^include \.\/permissions\.conf$/m);
      const permissions = byKind<IConfigMap>(render(overlay), "ConfigMap").find((c) =>
        c.metadata?.name?.startsWith("nats-permissions-"),
      );
      expect(permissions?.data?.["permissions.conf"]).toBe(
        readText(join(K8S, "../nats/permissions.conf")),
      );
      const blocks = [...conf.matchAll(/tls \{([^}]*)\}/g)].map((m) => m[1] ?? "");
      if (overlay === "overlays/dev") {
        expect(blocks).toEqual([]);
        return;
      }
      expect(blocks.length).toBe(2);
      for (const block of blocks) expect(block).toMatch(/verify: true/);
      // The cluster block holds the routes' TLS.
      expect(/cluster \{[\s\S]*tls \{[\s\S]*routes-tls/.test(conf)).toBe(true);
    },
  );

  test.each(OVERLAYS)(
    "%s: routes, ports, paths and lame duck agree with the StatefulSet",
    (overlay) => {
      const conf = natsConf(overlay);
      const sts = named<IStatefulSet>(render(overlay), "StatefulSet", "nats");
      const replicas = sts.spec?.replicas ?? 1;
      const pod = sts.spec?.template.spec;
      const c = pod?.containers[0];
      const ports = new Map((c?.ports ?? []).map((p) => [p.name, p.containerPort]));
      const routes = [...conf.matchAll(/nats:\/\/([\w.-]+):(\d+)/g)].map((m) => `${m[1]}:${m[2]}`);
      if (replicas === 1) {
        expect(conf).not.toMatch(/^cluster\s*\{/m);
      } else {
        const expected = Array.from(
          { length: replicas },
          (_, i) => `nats-${i}.${sts.spec?.serviceName}:6222`,
        );
        expect(routes).toEqual(expected);
        expect(conf).toMatch(/listen:\s*0\.0\.0\.0:6222/);
        expect(ports.get("cluster")).toBe(6222);
      }
      expect(conf).toMatch(/listen:\s*0\.0\.0\.0:4222/);
      expect(ports.get("client")).toBe(4222);
      expect(conf).toMatch(/http_port:\s*8222/);
      expect(ports.get("monitor")).toBe(8222);
      expect(conf).toMatch(/server_name:\s*\$SERVER_NAME/);
      expect(c?.env?.find((e) => e.name === "SERVER_NAME")?.value).toBe("$(POD_NAME)");
      // JetStream store on the PVC; pid file on a writable emptyDir, the one preStop signals.
      const storeDir = /store_dir:\s*(\S+)/.exec(conf)?.[1];
      expect(c?.volumeMounts?.find((m) => m.mountPath === storeDir)?.name).toBe("data");
      expect(sts.spec?.volumeClaimTemplates?.map((t) => t.metadata?.name)).toEqual(["data"]);
      const pidFile = /pid_file:\s*(\S+)/.exec(conf)?.[1] ?? "";
      const runMount = c?.volumeMounts?.find((m) => pidFile.startsWith(`${m.mountPath}/`));
      expect(pod?.volumes?.find((v) => v.name === runMount?.name)?.emptyDir).toBeDefined();
      const preStop = (c?.lifecycle?.preStop?.exec?.command ?? []).join(" ");
      expect(preStop).toContain(`--signal ldm=${pidFile}`);
      const lameDuck =
        seconds(conf, "lame_duck_duration") + seconds(conf, "lame_duck_grace_period");
      expect(pod?.terminationGracePeriodSeconds ?? 30).toBeGreaterThan(lameDuck + 10);
    },
  );
});
