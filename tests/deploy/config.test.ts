import { describe, expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { parseConfig } from "../../shared/config/index.ts";

// The config files the manifests ship must be valid Switchyard configs, listen on the pod IP, use
// the ports the probes and Services point at, and reference only Secret keys that exist.

const K8S = join(import.meta.dir, "../../deploy/k8s");
const CONFIGS = [
  { path: "base/switchyard.yaml", secret: "base/secret.example.yaml", replicas: 3 },
  { path: "overlays/prod/switchyard.yaml", secret: "base/secret.example.yaml", replicas: 3 },
  { path: "overlays/dev/switchyard.yaml", secret: "overlays/dev/secret-dev.yaml", replicas: 1 },
] as const;

/** Set by each Deployment and the setup Job (env), not Secrets: the pod's NATS user and role. */
const POD_ENV = { NATS_USER: "ingress", SWITCHYARD_ROLE: "ingress" };

/** `${file:…}` references: the NATS password file each pod mounts from switchyard-nats-users. */
const readFile = (path: string) => {
  if (path !== "/etc/switchyard-nats/password") throw new Error(`unexpected file ${path}`);
  return "a-password";
};

/** ${NAME} references outside comments. */
const referenced = (text: string) =>
  [...text.replace(/#.*$/gm, "").matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map(
    (m) => m[1] as string,
  );

/** A value of the right shape for a secret, guessed from its name, for parsing the example. */
function sampleValue(name: string): string {
  if (name.endsWith("_SHA256")) return "a".repeat(64);
  if (name.endsWith("_SECRET")) return `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
  if (name.endsWith("_KEY")) {
    return generateKeyPairSync("ed25519")
      .privateKey.export({ type: "pkcs8", format: "pem" })
      .toString();
  }
  return "value";
}

async function secretKeys(path: string): Promise<Record<string, string>> {
  const doc = parseYaml(await Bun.file(join(K8S, path)).text()) as {
    stringData: Record<string, string>;
  };
  return doc.stringData;
}

describe("shipped Switchyard configs", () => {
  for (const { path, secret, replicas } of CONFIGS) {
    test(`${path} parses, listens on 0.0.0.0:8080/9090, R${replicas}, and uses only keys of ${secret}`, async () => {
      const text = await Bun.file(join(K8S, path)).text();
      const keys = await secretKeys(secret);
      const names = referenced(text);
      expect(names.length).toBeGreaterThan(0);
      for (const name of names.filter((n) => !(n in POD_ENV))) {
        expect(Object.keys(keys)).toContain(name);
      }
      const env = { ...Object.fromEntries(names.map((n) => [n, sampleValue(n)])), ...POD_ENV };
      const config = parseConfig(text, env, path, { readFile });
      expect(config.server.host).toBe("0.0.0.0");
      expect(config.server.port).toBe(8080);
      expect(config.monitoring.host).toBe("0.0.0.0");
      expect(config.monitoring.port).toBe(9090);
      expect(config.nats.replicas).toBe(replicas);
      expect(config.clients.length).toBeGreaterThan(0);
      expect(config.routes.length).toBeGreaterThan(0);
      // Each pod is its own NATS user with its own inbox, and never manages streams.
      expect(config.nats.auth).toEqual({ user: "ingress", password: "a-password" });
      expect(config.nats.inbox_prefix).toBe("_INBOX_ingress");
      expect(config.nats.manage_topology).toBe(false);
      if (!path.includes("dev")) expect(config.nats.tls?.cert_file).toBeDefined();
    });
  }

  test("the dev Secret's values make the dev config valid as shipped", async () => {
    const text = await Bun.file(join(K8S, "overlays/dev/switchyard.yaml")).text();
    const env = await secretKeys("overlays/dev/secret-dev.yaml");
    expect(() => parseConfig(text, { ...env, ...POD_ENV }, "dev", { readFile })).not.toThrow();
  });

  test("switchyard-nats-users: a password for every user of permissions.conf; the example holds placeholders", async () => {
    const permissions = (await Bun.file(join(K8S, "../nats/permissions.conf")).text()).replace(
      /#.*$/gm,
      "",
    );
    const wanted = [...permissions.matchAll(/password: \$(\w+)/g)].map((m) => m[1] ?? "").sort();
    expect(wanted.length).toBe(9); // NATS_ROLES
    const example = await secretKeys("base/nats-users.secret.example.yaml");
    const dev = await secretKeys("overlays/dev/secret-nats-users-dev.yaml");
    expect(Object.keys(example).sort()).toEqual(wanted);
    expect(Object.keys(dev).sort()).toEqual(wanted);
    for (const value of Object.values(example)) expect(value).toContain("REPLACE_ME");
  });

  test("the example Secret holds placeholders only", async () => {
    for (const value of Object.values(await secretKeys("base/secret.example.yaml"))) {
      expect(value).toContain("REPLACE_ME");
    }
  });
});
