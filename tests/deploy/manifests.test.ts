import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IStatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import type { IJob } from "kubernetes-models/batch/v1/Job";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import type { ISecret } from "kubernetes-models/v1/Secret";
import { parse } from "yaml";
import {
  asK8sObject,
  byKind,
  findKustomize,
  HUB_DEPLOYMENT_NAMES,
  HUB_DEPLOYMENTS,
  isCustomKind,
  isRecord,
  K8S,
  type K8sObject,
  listFiles,
  named,
  OVERLAYS,
  parseYamlDocs,
  REPO,
  readText,
  render,
  validateObject,
} from "./k8s.ts";

const SERVICES = HUB_DEPLOYMENT_NAMES;
const RENDER_MS = 30_000;

/** Every kustomization.yaml and what it refers to, by kind of reference. */
function kustomizations() {
  return listFiles(K8S)
    .filter((f) => f.endsWith("kustomization.yaml"))
    .map((file) => {
      const dir = join(K8S, file, "..");
      const k = parse(readText(join(K8S, file)));
      if (!isRecord(k)) throw new Error(`${file} is not a mapping`);
      const list = (key: string): string[] => {
        const v = k[key];
        return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
      };
      const generated = [
        ...(Array.isArray(k.configMapGenerator) ? k.configMapGenerator : []),
        ...(Array.isArray(k.secretGenerator) ? k.secretGenerator : []),
      ].flatMap((g) => (isRecord(g) && Array.isArray(g.files) ? g.files.map(String) : []));
      return {
        file,
        dir,
        kustomization: k,
        resources: list("resources").map((r) => join(dir, r)),
        bases: list("bases").map((r) => join(dir, r)),
        patches: list("patchesStrategicMerge").map((r) => join(dir, r)),
        generated: generated.map((r) => join(dir, r)),
      };
    });
}

describe("deploy/k8s source files", () => {
  test("every YAML file parses, and every resource file holds complete Kubernetes objects that validate", () => {
    const all = listFiles(K8S).filter((f) => f.endsWith(".yaml"));
    expect(all.length).toBeGreaterThan(20);
    for (const file of all) {
      const docs = parseYamlDocs(readText(join(K8S, file)), file);
      expect(docs.length).toBeGreaterThan(0);
    }
    const resources = kustomizations().flatMap((k) => k.resources);
    expect(resources.length).toBeGreaterThan(10);
    for (const path of resources) {
      for (const doc of parseYamlDocs(readText(path), path)) validateObject(asK8sObject(doc, path));
    }
    // The example Secret is not referenced anywhere, but must validate as well.
    const example = join(K8S, "base/secret.example.yaml");
    for (const doc of parseYamlDocs(readText(example), example)) {
      validateObject(asK8sObject(doc, example));
    }
  });

  test("every file is used by a kustomization (no orphans), except the Secret example", () => {
    const used = new Set<string>();
    for (const k of kustomizations()) {
      used.add(join(K8S, k.file));
      for (const p of [...k.resources, ...k.patches, ...k.generated]) used.add(p);
    }
    const orphans = listFiles(K8S)
      .map((f) => join(K8S, f))
      .filter((f) => !used.has(f) && !f.endsWith("secret.example.yaml"));
    expect(orphans).toEqual([]);
  });

  test("kustomizations use only the subset that kustomize v2.0.3 and v5 both render", () => {
    const allowed = new Set([
      "apiVersion",
      "kind",
      "namespace",
      "resources",
      "bases",
      "configMapGenerator",
      "patchesStrategicMerge",
      "images",
    ]);
    for (const k of kustomizations()) {
      for (const key of Object.keys(k.kustomization)) {
        if (!allowed.has(key)) throw new Error(`${k.file}: field ${key} is outside the subset`);
      }
      // kustomize v2.0.3 loads only files in `resources` and only directories in `bases`.
      for (const r of k.resources) expect(r.endsWith(".yaml")).toBe(true);
      for (const b of k.bases) expect(listFiles(b)).toContain("kustomization.yaml");
      expect(k.kustomization.namespace).toBe("switchyard");
    }
  });
});

describe.each(OVERLAYS)("kustomize render of %s", (overlay) => {
  test(
    "renders, and every object validates against the Kubernetes OpenAPI schema",
    () => {
      const objects = render(overlay);
      expect(objects.length).toBeGreaterThan(15);
      for (const obj of objects) validateObject(obj);
      const ids = objects.map((o) => `${o.kind}/${o.metadata.name}`);
      expect(new Set(ids).size).toBe(ids.length);
      for (const obj of objects) {
        if (obj.kind !== "Namespace") expect(obj.metadata.namespace).toBe("switchyard");
      }
      expect(objects.filter(isCustomKind).length).toBe(overlay === "overlays/prod-keda" ? 2 : 0);
    },
    RENDER_MS,
  );

  test("has the namespace, service account, the five services in four Deployments and NATS", () => {
    const objects = render(overlay);
    named(objects, "Namespace", "switchyard");
    named(objects, "ServiceAccount", "switchyard");
    for (const svc of SERVICES) {
      const d = named<IDeployment>(objects, "Deployment", `switchyard-${svc}`);
      const c = d.spec?.template.spec?.containers[0];
      expect(c?.args).toEqual(["serve", ...HUB_DEPLOYMENTS[svc]]);
      expect(d.spec?.template.spec?.serviceAccountName).toBe("switchyard");
      // JSC sizes its heap for the container's limit, not the node's RAM (docs/performance.md).
      const ram = c?.env?.find((e) => e.name === "BUN_JSC_forceRAMSize");
      expect(ram?.valueFrom?.resourceFieldRef).toEqual({
        containerName: c?.name,
        resource: "limits.memory",
      });
      expect(c?.resources?.limits?.memory).toBeDefined();
    }
    expect(byKind(objects, "Deployment").length).toBe(SERVICES.length);
    const sts = named<IStatefulSet>(objects, "StatefulSet", "nats");
    expect(sts.spec?.serviceName).toBe("nats-headless");
    named(objects, "Service", "nats");
    named(objects, "Service", "nats-headless");
    named(objects, "Service", "switchyard-ingress");
    named(objects, "HorizontalPodAutoscaler", "switchyard-ingress");
  });

  test("every ConfigMap and Secret a workload refers to is in the render", () => {
    const objects = render(overlay);
    const configMaps = new Set(byKind(objects, "ConfigMap").map((o) => o.metadata.name));
    const secrets = new Set(byKind(objects, "Secret").map((o) => o.metadata.name));
    for (const w of [
      ...byKind<IDeployment>(objects, "Deployment"),
      ...byKind<IStatefulSet>(objects, "StatefulSet"),
      ...byKind<IJob>(objects, "Job"),
    ]) {
      const spec = w.spec?.template.spec;
      for (const v of spec?.volumes ?? []) {
        if (v.configMap) expect(configMaps.has(v.configMap.name ?? "")).toBe(true);
        for (const source of v.projected?.sources ?? []) {
          expect(configMaps.has(source.configMap?.name ?? "")).toBe(true);
        }
        // Certificates come from cert-manager; the NATS users Secret is made out of band (dev ships one).
        if (v.secret && !v.secret.optional && overlay === "overlays/dev") {
          expect(secrets.has(v.secret.secretName ?? "")).toBe(true);
        }
      }
      for (const c of spec?.containers ?? []) {
        for (const ref of c.envFrom ?? []) {
          // The Secret is created out of band in prod (docs/deploy.md); dev ships placeholders.
          if (ref.secretRef && overlay === "overlays/dev") {
            expect(secrets.has(ref.secretRef.name ?? "")).toBe(true);
          }
        }
      }
    }
  });
});

function configOf(objects: readonly K8sObject[]): Record<string, unknown> {
  const cms = byKind<IConfigMap>(objects, "ConfigMap").filter((c) =>
    c.metadata?.name?.startsWith("switchyard-config-"),
  );
  expect(cms.length).toBe(1);
  const text = cms[0]?.data?.["switchyard.yaml"];
  if (!text) throw new Error("switchyard-config has no switchyard.yaml");
  const config = parse(text);
  if (!isRecord(config)) throw new Error("switchyard.yaml is not a mapping");
  return config;
}

function natsReplicas(objects: readonly K8sObject[]): number | undefined {
  return named<IStatefulSet>(objects, "StatefulSet", "nats").spec?.replicas;
}

describe("overlays", () => {
  test(
    "dev: one NATS node and R1 streams; prod: three nodes and R3 (nats.replicas: 3)",
    () => {
      const dev = render("overlays/dev");
      const prod = render("overlays/prod");
      expect(natsReplicas(dev)).toBe(1);
      expect(natsReplicas(prod)).toBe(3);
      const devNats = configOf(dev).nats;
      const prodNats = configOf(prod).nats;
      if (!isRecord(devNats) || !isRecord(prodNats)) throw new Error("config lacks nats");
      expect(devNats.replicas).toBe(1);
      expect(prodNats.replicas).toBe(3);
      expect(prodNats.events_max_age).toBe("30d");
      // Replicas of streams can never exceed the number of NATS nodes.
      for (const overlay of OVERLAYS) {
        const objects = render(overlay);
        const nats = configOf(objects).nats;
        if (!isRecord(nats)) throw new Error("config lacks nats");
        expect(Number(nats.replicas)).toBeLessThanOrEqual(natsReplicas(objects) ?? 0);
        expect(nats.url).toBe("nats://nats:4222");
      }
    },
    RENDER_MS,
  );

  test("prod runs more than one replica of every service, the read models included; dev one of each", () => {
    const replicas = (objects: readonly K8sObject[], svc: string) => {
      if (svc === "ingress") {
        const hpa = named<{ spec: { minReplicas: number } }>(
          objects,
          "HorizontalPodAutoscaler",
          "switchyard-ingress",
        );
        return hpa.spec.minReplicas;
      }
      return named<IDeployment>(objects, "Deployment", `switchyard-${svc}`).spec?.replicas ?? 1;
    };
    const dev = render("overlays/dev");
    const prod = render("overlays/prod");
    for (const svc of SERVICES) {
      expect(replicas(dev, svc)).toBe(1);
      expect(replicas(prod, svc)).toBeGreaterThan(1);
    }
    for (const overlay of [dev, prod]) {
      // No Deployment stops all its pods to update: the read models' standby takes the leases.
      for (const svc of SERVICES) {
        const deployment = named<IDeployment>(overlay, "Deployment", `switchyard-${svc}`);
        expect(deployment.spec?.strategy?.type ?? "RollingUpdate").toBe("RollingUpdate");
      }
      const readModels = named<IDeployment>(overlay, "Deployment", "switchyard-read-models");
      expect(readModels.spec?.strategy?.rollingUpdate?.maxUnavailable).toBe(0);
    }
  });

  test("base: every service runs more than one replica, the read models two (active and standby)", () => {
    const base = render("base");
    const hpa = named<{ spec: { minReplicas: number } }>(
      base,
      "HorizontalPodAutoscaler",
      "switchyard-ingress",
    );
    expect(hpa.spec.minReplicas).toBeGreaterThan(1);
    for (const svc of ["read-models", "executor", "callback"] as const) {
      const deployment = named<IDeployment>(base, "Deployment", `switchyard-${svc}`);
      expect(deployment.spec?.replicas ?? 1).toBeGreaterThan(1);
    }
    // One folds, one stands by; more would only add standbys. Prod keeps the base's count.
    for (const overlay of ["base", "overlays/prod", "overlays/prod-keda"] as const) {
      const deployment = named<IDeployment>(
        render(overlay),
        "Deployment",
        "switchyard-read-models",
      );
      expect(deployment.spec?.replicas).toBe(2);
    }
    for (const overlay of OVERLAYS) {
      for (const d of byKind<IDeployment>(render(overlay), "Deployment")) {
        expect(d.spec?.strategy?.type ?? "RollingUpdate").toBe("RollingUpdate");
      }
    }
  });

  test("every service has a PodDisruptionBudget that lets one pod go at a time", () => {
    for (const overlay of ["overlays/dev", "overlays/prod"] as const) {
      const pdbs = byKind<{ metadata: { name: string }; spec: { maxUnavailable?: number } }>(
        render(overlay),
        "PodDisruptionBudget",
      );
      for (const svc of SERVICES) {
        const pdb = pdbs.find((p) => p.metadata.name === `switchyard-${svc}`);
        expect(pdb?.spec.maxUnavailable).toBe(1);
      }
    }
  });

  test("the ingress Deployment leaves its replica count to the HPA", () => {
    for (const overlay of OVERLAYS) {
      const d = named<IDeployment>(render(overlay), "Deployment", "switchyard-ingress");
      expect(d.spec?.replicas).toBeUndefined();
    }
  });

  test("prod has the optional Ingress, routed to the ingress Service's http port", () => {
    const prod = render("overlays/prod");
    const ing = named<{
      spec: {
        rules: {
          http: { paths: { backend: { service: { name: string; port: { name: string } } } }[] };
        }[];
      };
    }>(prod, "Ingress", "switchyard-ingress");
    const backend = ing.spec.rules[0]?.http.paths[0]?.backend.service;
    expect(backend?.name).toBe("switchyard-ingress");
    const svc = named<{ spec: { ports: { name: string }[] } }>(
      prod,
      "Service",
      "switchyard-ingress",
    );
    expect(svc.spec.ports.map((p) => p.name)).toContain(backend?.port.name ?? "");
    // Only the API port is reachable through the Ingress: /metrics lives on the monitoring port, which
    // the Service does not expose.
    const service = named<{ spec: { ports: { targetPort: string | number }[] } }>(
      prod,
      "Service",
      "switchyard-ingress",
    );
    expect(service.spec.ports.map((p) => p.targetPort)).toEqual(["http"]);
    const d = named<IDeployment>(prod, "Deployment", "switchyard-ingress");
    const http = d.spec?.template.spec?.containers[0]?.ports?.find((p) => p.name === "http");
    expect(http?.containerPort).toBe(8080);
    expect(byKind(render("overlays/dev"), "Ingress")).toEqual([]);
  });

  test("KEDA ScaledObjects (prod-keda) scale only executor and callback, on the lag of what feeds them", () => {
    const objects = render("overlays/prod-keda");
    const scaled = byKind<{
      spec: {
        scaleTargetRef: { kind: string; name: string };
        triggers: { metadata: Record<string, string> }[];
      };
    }>(objects, "ScaledObject");
    expect(scaled.map((s) => s.spec.scaleTargetRef.name).sort()).toEqual([
      "switchyard-callback",
      "switchyard-executor",
    ]);
    // Each scales on the lag of every durable consumer that feeds it.
    const lagOf = (name: string) =>
      scaled
        .find((s) => s.spec.scaleTargetRef.name === name)
        ?.spec.triggers.map((t) => `${t.metadata.stream}/${t.metadata.consumer}`);
    expect(lagOf("switchyard-executor")).toEqual(["SWITCHYARD_EVENTS/executor"]);
    expect(lagOf("switchyard-callback")).toEqual([
      "SWITCHYARD_EVENTS/callback",
      "SWITCHYARD_CALLBACKS/callback-queue",
    ]);
    // Not the route task queues (they drain at most the route's concurrency at a time) nor the
    // deadline consumers (parked timers, not work): docs/deploy.md says why and what to add.
    const docs = readText(join(REPO, "docs/deploy.md"));
    expect(docs).toContain("### Autoscaling on consumer lag (prod-keda)");
    for (const consumer of ["deadline_<ms>", "task_<route"]) expect(docs).toContain(consumer);
    for (const s of scaled) {
      named(objects, s.spec.scaleTargetRef.kind, s.spec.scaleTargetRef.name);
      const endpoint = s.spec.triggers[0]?.metadata.natsServerMonitoringEndpoint ?? "";
      // In a cluster KEDA asks <server_name>.<endpoint>: the headless service and pod names.
      expect(endpoint).toBe("nats-headless.switchyard.svc.cluster.local:8222");
    }
  });

  test("Secrets: no Secret in base or prod; the examples hold placeholders only; dev uses their keys", () => {
    expect(byKind(render("base"), "Secret")).toEqual([]);
    expect(byKind(render("overlays/prod"), "Secret")).toEqual([]);
    const devSecrets = byKind<ISecret>(render("overlays/dev"), "Secret");
    expect(devSecrets.map((d) => d.metadata?.name).sort()).toEqual([
      "switchyard-nats-users",
      "switchyard-secrets",
    ]);
    const placeholder = /REPLACE_ME/;
    for (const [file, name] of [
      ["base/secret.example.yaml", "switchyard-secrets"],
      ["base/nats-users.secret.example.yaml", "switchyard-nats-users"],
    ] as const) {
      const example = parseYamlDocs(readText(join(K8S, file)), file)[0] as ISecret;
      const dev = devSecrets.find((d) => d.metadata?.name === name);
      for (const s of [dev, example]) {
        expect(s?.metadata?.name).toBe(name);
        expect(s?.data).toBeUndefined();
        expect(Object.values(s?.stringData ?? {}).length).toBeGreaterThan(0);
      }
      // The example is placeholders only; dev holds well-known throwaway values so it starts as is.
      for (const v of Object.values(example.stringData ?? {})) expect(v).toMatch(placeholder);
      for (const key of Object.keys(dev?.stringData ?? {})) {
        expect(Object.keys(example.stringData ?? {})).toContain(key);
      }
    }
    // And the config that goes into ConfigMaps holds no secret values, only ${ENV} and
    // ${file:…} references (the NATS password is a mounted file).
    for (const overlay of OVERLAYS) {
      const config = configOf(render(overlay));
      const text = JSON.stringify(config).replace(/\$\{[^}]*\}/g, "");
      expect(text).not.toMatch(/whsec_|REPLACE_ME/i);
      const nats = isRecord(config.nats) ? config.nats : {};
      const auth = isRecord(nats.auth) ? nats.auth : {};
      expect(auth.password).toBe(`$\{file:/etc/switchyard-nats/password}`);
    }
  });
});

test("a kustomize is available (CI: apt-get install -y kubernetes-client)", () => {
  const tool = findKustomize();
  console.log(`kustomize renders with: ${tool.description}`);
  expect(tool.command.length).toBeGreaterThan(1);
});
