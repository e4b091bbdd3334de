import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { IStatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import { findNatsServerBinary } from "../../shared/nats/index.ts";
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

describe("nats-server config files", () => {
  test.each(["base/nats.conf", "overlays/dev/nats.conf"])(
    "%s is accepted by nats-server -t",
    (file) => {
      const run = Bun.spawnSync([findNatsServerBinary(process.env), "-t", "-c", join(K8S, file)], {
        env: { ...process.env, SERVER_NAME: "nats-0" },
        stdout: "pipe",
        stderr: "pipe",
      });
      const out = `${run.stdout.toString()}${run.stderr.toString()}`;
      expect(out).toContain("is valid");
      expect(run.exitCode).toBe(0);
    },
  );

  test("nats-server -t does reject an unknown option (the check above can fail)", async () => {
    const path = join(import.meta.dir, `.bad-${process.pid}.conf`);
    await Bun.write(path, `${readText(join(K8S, "base/nats.conf"))}\nno_such_option: 1\n`);
    try {
      const run = Bun.spawnSync([findNatsServerBinary(process.env), "-t", "-c", path], {
        env: { ...process.env, SERVER_NAME: "nats-0" },
        stdout: "pipe",
        stderr: "pipe",
      });
      expect(run.exitCode).not.toBe(0);
      expect(run.stderr.toString()).toContain("no_such_option");
    } finally {
      await Bun.file(path).delete();
    }
  });

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
