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
      for (const name of names) expect(Object.keys(keys)).toContain(name);
      const env = Object.fromEntries(names.map((n) => [n, sampleValue(n)]));
      const config = parseConfig(text, env, path);
      expect(config.server.host).toBe("0.0.0.0");
      expect(config.server.port).toBe(8080);
      expect(config.monitoring.host).toBe("0.0.0.0");
      expect(config.monitoring.port).toBe(9090);
      expect(config.nats.replicas).toBe(replicas);
      expect(config.clients.length).toBeGreaterThan(0);
      expect(config.routes.length).toBeGreaterThan(0);
    });
  }

  test("the dev Secret's values make the dev config valid as shipped", async () => {
    const text = await Bun.file(join(K8S, "overlays/dev/switchyard.yaml")).text();
    const env = await secretKeys("overlays/dev/secret-dev.yaml");
    expect(() => parseConfig(text, env, "dev")).not.toThrow();
  });

  test("the example Secret holds placeholders only", async () => {
    for (const value of Object.values(await secretKeys("base/secret.example.yaml"))) {
      expect(value).toContain("REPLACE_ME");
    }
  });
});
