import { describe, expect, test } from "bun:test";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import type { IStatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import type { IHorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import type { INetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import type { IPodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import type { IConfigMap } from "kubernetes-models/v1/ConfigMap";
import type { IContainer } from "kubernetes-models/v1/Container";
import type { IPodSpec } from "kubernetes-models/v1/PodSpec";
import type { IService } from "kubernetes-models/v1/Service";
import { parse } from "yaml";
import {
  byKind,
  HUB_DEPLOYMENT_NAMES,
  isRecord,
  type K8sObject,
  named,
  OVERLAYS,
  type Overlay,
  render,
  selects,
} from "./k8s.ts";
import { canConnect, type Peer } from "./netpol.ts";

type Workload = {
  kind: string;
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  pod: IPodSpec;
};

function workloads(objects: readonly K8sObject[]): Workload[] {
  return [
    ...byKind<IDeployment>(objects, "Deployment"),
    ...byKind<IStatefulSet>(objects, "StatefulSet"),
  ].map((w) => {
    const pod = w.spec?.template.spec;
    if (!pod) throw new Error(`${w.kind} ${w.metadata?.name} has no pod spec`);
    return {
      kind: w.kind,
      name: w.metadata?.name ?? "",
      labels: w.spec?.template.metadata?.labels ?? {},
      annotations: w.spec?.template.metadata?.annotations ?? {},
      pod,
    };
  });
}

function containersOf(pod: IPodSpec): IContainer[] {
  return [...pod.containers, ...(pod.initContainers ?? [])];
}

/** Problems with one container against the policy; empty when it complies. */
export function containerProblems(pod: IPodSpec, c: IContainer): string[] {
  const problems: string[] = [];
  for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"] as const) {
    if (!c[probe]) problems.push(`no ${probe}`);
  }
  for (const kind of ["requests", "limits"] as const) {
    for (const res of ["cpu", "memory"]) {
      if (c.resources?.[kind]?.[res] === undefined) problems.push(`no ${kind}.${res}`);
    }
  }
  const sc = c.securityContext ?? {};
  const psc = pod.securityContext ?? {};
  if ((sc.runAsNonRoot ?? psc.runAsNonRoot) !== true) problems.push("runAsNonRoot not true");
  if ((sc.runAsUser ?? psc.runAsUser ?? 0) === 0) problems.push("no non-zero runAsUser");
  if (sc.readOnlyRootFilesystem !== true) problems.push("readOnlyRootFilesystem not true");
  if (sc.allowPrivilegeEscalation !== false) problems.push("allowPrivilegeEscalation not false");
  if (sc.privileged === true) problems.push("privileged");
  if (!(sc.capabilities?.drop ?? []).includes("ALL")) problems.push("capabilities do not drop ALL");
  if ((sc.capabilities?.add ?? []).length > 0) problems.push("capabilities added");
  const seccomp = sc.seccompProfile?.type ?? psc.seccompProfile?.type;
  if (seccomp !== "RuntimeDefault") problems.push(`seccompProfile ${seccomp ?? "unset"}`);
  const image = c.image ?? "";
  const tag = /^(?:[^/]+\/)*[^/:@]+:([\w][\w.-]{0,127})(?:@sha256:[0-9a-f]{64})?$/.exec(image)?.[1];
  if (!tag) problems.push(`image ${image} has no tag`);
  else if (tag === "latest" || !/\d/.test(tag)) problems.push(`image ${image} is not pinned`);
  return problems;
}

describe("container policy checker (self-test)", () => {
  const good = (): { pod: IPodSpec; c: IContainer } => {
    const c: IContainer = {
      name: "x",
      image: "registry.example.com/switchyard:0.1.0",
      startupProbe: { httpGet: { path: "/healthz", port: 1 } },
      livenessProbe: { httpGet: { path: "/healthz", port: 1 } },
      readinessProbe: { httpGet: { path: "/readyz", port: 1 } },
      resources: { requests: { cpu: "1", memory: "1Mi" }, limits: { cpu: "1", memory: "1Mi" } },
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 10,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
        seccompProfile: { type: "RuntimeDefault" },
      },
    };
    return { pod: { containers: [c] }, c };
  };
  test("accepts a compliant container", () => {
    const { pod, c } = good();
    expect(containerProblems(pod, c)).toEqual([]);
  });
  const cases: [string, (c: IContainer) => void, string][] = [
    [
      "no probe",
      (c) => {
        c.readinessProbe = undefined;
      },
      "no readinessProbe",
    ],
    [
      "no limit",
      (c) => {
        c.resources = { requests: c.resources?.requests, limits: { cpu: "1" } };
      },
      "no limits.memory",
    ],
    [
      "latest",
      (c) => {
        c.image = "nats:latest";
      },
      "is not pinned",
    ],
    [
      "untagged",
      (c) => {
        c.image = "registry.example.com:5000/nats";
      },
      "has no tag",
    ],
    [
      "writable root",
      (c) => {
        c.securityContext = { ...c.securityContext, readOnlyRootFilesystem: false };
      },
      "readOnlyRootFilesystem",
    ],
    [
      "caps",
      (c) => {
        c.securityContext = { ...c.securityContext, capabilities: { drop: ["NET_RAW"] } };
      },
      "drop ALL",
    ],
    [
      "seccomp",
      (c) => {
        c.securityContext = { ...c.securityContext, seccompProfile: undefined };
      },
      "seccompProfile unset",
    ],
    [
      "root",
      (c) => {
        c.securityContext = { ...c.securityContext, runAsUser: 0 };
      },
      "runAsUser",
    ],
  ];
  test.each(cases)("flags %s", (_name, mutate, message) => {
    const { pod, c } = good();
    mutate(c);
    expect(containerProblems(pod, c).join("; ")).toContain(message);
  });
});

describe.each(OVERLAYS)("policy: %s", (overlay: Overlay) => {
  test("every container has probes, requests and limits, the security context and a pinned image", () => {
    const ws = workloads(render(overlay));
    expect(ws.length).toBe(5); // the hub's four Deployments (five services) and NATS
    const problems = ws.flatMap((w) =>
      containersOf(w.pod).flatMap((c) =>
        containerProblems(w.pod, c).map((p) => `${w.kind}/${w.name}/${c.name}: ${p}`),
      ),
    );
    expect(problems).toEqual([]);
  });

  test("probes hit declared ports; hub services use /healthz and /readyz on 8080 (ingress) or 9090; metrics only on 9090", () => {
    const objects = render(overlay);
    const config = configOf(objects);
    for (const w of workloads(objects)) {
      for (const c of w.pod.containers) {
        const ports = new Map((c.ports ?? []).map((p) => [p.name, p.containerPort]));
        for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) {
          const port = probe?.httpGet?.port;
          expect(typeof port === "string" ? ports.has(port) : typeof port === "number").toBe(true);
        }
        if (w.kind !== "Deployment") continue;
        const svc = w.labels["app.kubernetes.io/component"];
        // Every service has the monitoring port (metrics); the ingress has the API port besides.
        const expected =
          svc === "ingress" ? [config.serverPort, config.monitoringPort] : [config.monitoringPort];
        expect([...ports.values()]).toEqual(expected);
        expect(w.annotations?.["prometheus.io/port"]).toBe(String(config.monitoringPort));
        // Libraries switch off development behaviour (Elysia's detailed errors) on this.
        expect(c.env?.find((e) => e.name === "NODE_ENV")?.value).toBe("production");
        expect(c.livenessProbe?.httpGet?.path).toBe("/healthz");
        expect(c.startupProbe?.httpGet?.path).toBe("/healthz");
        expect(c.readinessProbe?.httpGet?.path).toBe("/readyz");
      }
    }
  });

  test("graceful shutdown fits the grace period; a writable /tmp exists; no API token mounted", () => {
    for (const w of workloads(render(overlay))) {
      const grace = w.pod.terminationGracePeriodSeconds ?? 30;
      if (w.kind === "Deployment") {
        // ~20 s of in-flight work, NATS drain, plus the ingress preStop pause.
        const preStop = w.pod.containers[0]?.lifecycle?.preStop?.sleep?.seconds ?? 0;
        expect(grace - preStop).toBeGreaterThanOrEqual(25);
        expect(grace).toBeLessThanOrEqual(45);
        const tmp = w.pod.containers[0]?.volumeMounts?.find((m) => m.mountPath === "/tmp");
        const volume = w.pod.volumes?.find((v) => v.name === tmp?.name);
        expect(volume?.emptyDir).toBeDefined();
      }
      expect(w.pod.automountServiceAccountToken).toBe(false);
    }
  });

  test("every Deployment and StatefulSet has exactly one PodDisruptionBudget, and it allows a drain", () => {
    const objects = render(overlay);
    const pdbs = byKind<IPodDisruptionBudget>(objects, "PodDisruptionBudget");
    for (const w of workloads(objects)) {
      const matching = pdbs.filter((p) => selects(p.spec?.selector, w.labels));
      expect(matching.map((p) => p.metadata?.name)).toHaveLength(1);
      expect(matching[0]?.spec?.maxUnavailable).toBe(1);
    }
  });

  test("Deployments spread over zones and nodes; NATS nodes never share a machine", () => {
    const objects = render(overlay);
    for (const w of workloads(objects)) {
      const spread = w.pod.topologySpreadConstraints ?? [];
      const keys = spread.map((t) => t.topologyKey);
      expect(keys).toContain("topology.kubernetes.io/zone");
      for (const t of spread) expect(selects(t.labelSelector, w.labels)).toBe(true);
      if (w.kind === "Deployment") expect(keys).toContain("kubernetes.io/hostname");
    }
    const nats = named<IStatefulSet>(objects, "StatefulSet", "nats");
    const anti =
      nats.spec?.template.spec?.affinity?.podAntiAffinity
        ?.requiredDuringSchedulingIgnoredDuringExecution ?? [];
    expect(anti.map((a) => a.topologyKey)).toEqual(["kubernetes.io/hostname"]);
    expect(selects(anti[0]?.labelSelector, nats.spec?.template.metadata?.labels)).toBe(true);
  });

  test("NATS image is pinned to >= 2.11; the hub services run one shared image", () => {
    const ws = workloads(render(overlay));
    const natsImage = ws.find((w) => w.name === "nats")?.pod.containers[0]?.image ?? "";
    const version = /^nats:(\d+)\.(\d+)\.(\d+)(-alpine)?$/.exec(natsImage);
    expect(version).not.toBeNull();
    const [major, minor] = [Number(version?.[1]), Number(version?.[2])];
    expect(major > 2 || (major === 2 && minor >= 11)).toBe(true);
    const hubImages = new Set(
      ws.filter((w) => w.kind === "Deployment").map((w) => w.pod.containers[0]?.image),
    );
    expect(hubImages.size).toBe(1);
  });

  test("the ingress Service and HPA point at the ingress pods; the HPA scales on CPU", () => {
    const objects = render(overlay);
    const ingress = named<IDeployment>(objects, "Deployment", "switchyard-ingress");
    const podLabels = ingress.spec?.template.metadata?.labels;
    const svc = named<IService>(objects, "Service", "switchyard-ingress");
    expect(selects({ matchLabels: svc.spec?.selector }, podLabels)).toBe(true);
    const portNames = (ingress.spec?.template.spec?.containers[0]?.ports ?? []).map((p) => p.name);
    expect(portNames).toContain(String(svc.spec?.ports?.[0]?.targetPort));
    const hpa = named<IHorizontalPodAutoscaler>(
      objects,
      "HorizontalPodAutoscaler",
      "switchyard-ingress",
    );
    expect(hpa.spec?.scaleTargetRef).toEqual({
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "switchyard-ingress",
    });
    expect(hpa.spec?.metrics?.map((m) => m.resource?.name)).toEqual(["cpu"]);
    expect(hpa.spec?.minReplicas ?? 1).toBeLessThanOrEqual(hpa.spec?.maxReplicas ?? 0);
  });
});

function configOf(objects: readonly K8sObject[]): { serverPort: number; monitoringPort: number } {
  const cm = byKind<IConfigMap>(objects, "ConfigMap").find((c) =>
    c.metadata?.name?.startsWith("switchyard-config-"),
  );
  const config = parse(cm?.data?.["switchyard.yaml"] ?? "");
  if (!isRecord(config) || !isRecord(config.server) || !isRecord(config.monitoring)) {
    throw new Error("switchyard.yaml lacks server or monitoring");
  }
  return { serverPort: Number(config.server.port), monitoringPort: Number(config.monitoring.port) };
}

describe.each(OVERLAYS)("network policy: %s", (overlay: Overlay) => {
  const NS = { "kubernetes.io/metadata.name": "switchyard" };
  const pod = (labels: Record<string, string>): Peer => ({
    kind: "pod",
    namespace: "switchyard",
    namespaceLabels: NS,
    labels,
  });
  const hub = (component: string) =>
    pod({ "app.kubernetes.io/name": "switchyard", "app.kubernetes.io/component": component });
  const nats = pod({ "app.kubernetes.io/name": "nats" });
  const internet: Peer = { kind: "ip", ip: "203.0.113.10" };
  const metadataService: Peer = { kind: "ip", ip: "169.254.169.254" };
  const otherNamespacePod: Peer = {
    kind: "pod",
    namespace: "elsewhere",
    namespaceLabels: { "kubernetes.io/metadata.name": "elsewhere" },
    labels: { app: "curious" },
  };
  const dns: Peer = {
    kind: "pod",
    namespace: "kube-system",
    namespaceLabels: { "kubernetes.io/metadata.name": "kube-system" },
    labels: { "k8s-app": "kube-dns" },
  };
  const policies = () => byKind<INetworkPolicy>(render(overlay), "NetworkPolicy");
  const SERVICES = HUB_DEPLOYMENT_NAMES;

  test("a default deny for both directions exists", () => {
    const deny = policies().find((p) => p.metadata?.name === "default-deny-all");
    expect(deny?.spec?.podSelector).toEqual({});
    expect(deny?.spec?.policyTypes?.sort()).toEqual(["Egress", "Ingress"]);
    expect(deny?.spec?.ingress).toBeUndefined();
    expect(deny?.spec?.egress).toBeUndefined();
  });

  test("only the ingress service is reachable from outside the namespace", () => {
    const ps = policies();
    for (const from of [internet, otherNamespacePod]) {
      expect(canConnect(ps, from, hub("ingress"), { port: 8080 })).toBe(true);
      expect(canConnect(ps, from, hub("ingress"), { port: 9090 })).toBe(false);
      for (const svc of SERVICES.filter((s) => s !== "ingress")) {
        for (const port of [8080, 9090, 443]) {
          expect(canConnect(ps, from, hub(svc), { port })).toBe(false);
        }
      }
      for (const port of [4222, 6222, 8222])
        expect(canConnect(ps, from, nats, { port })).toBe(false);
    }
  });

  test("every hub service reaches NATS on 4222 (and DNS); NATS nodes reach each other on 6222", () => {
    const ps = policies();
    for (const svc of SERVICES) {
      expect(canConnect(ps, hub(svc), nats, { port: 4222 })).toBe(true);
      expect(canConnect(ps, hub(svc), nats, { port: 6222 })).toBe(false);
      expect(canConnect(ps, hub(svc), dns, { port: 53, protocol: "UDP" })).toBe(true);
    }
    expect(canConnect(ps, nats, nats, { port: 6222 })).toBe(true);
    expect(canConnect(ps, nats, dns, { port: 53, protocol: "UDP" })).toBe(true);
  });

  test("only executor and callback may leave the cluster (and not to the metadata service)", () => {
    const ps = policies();
    for (const svc of SERVICES) {
      const mayLeave = svc === "executor" || svc === "callback";
      expect(canConnect(ps, hub(svc), internet, { port: 443 })).toBe(mayLeave);
      expect(canConnect(ps, hub(svc), metadataService, { port: 80 })).toBe(false);
    }
    expect(canConnect(ps, nats, internet, { port: 443 })).toBe(false);
  });

  test("the ingress and the read models (the indexer) reach the search index's PostgreSQL on 5432; NATS does not", () => {
    const ps = policies();
    const database: Peer = { kind: "ip", ip: "10.20.30.40" };
    for (const svc of SERVICES) {
      // Executor and callback reach any outside address anyway (HTTP executors, callback URLs).
      expect(canConnect(ps, hub(svc), database, { port: 5432 })).toBe(true);
      expect(canConnect(ps, hub(svc), metadataService, { port: 5432 })).toBe(false);
    }
    // The read models' way out is that port only.
    expect(canConnect(ps, hub("read-models"), database, { port: 443 })).toBe(false);
    expect(canConnect(ps, hub("read-models"), internet, { port: 443 })).toBe(false);
    expect(canConnect(ps, nats, database, { port: 5432 })).toBe(false);
  });

  test("hub services do not accept connections from each other", () => {
    const ps = policies();
    for (const a of SERVICES) {
      for (const b of SERVICES.filter((s) => s !== "ingress")) {
        expect(canConnect(ps, hub(a), hub(b), { port: 9090 })).toBe(false);
      }
    }
  });

  test("every hub service may export traces to a collector namespace on 4318, and nothing more", () => {
    const ps = policies();
    const collector: Peer = {
      kind: "pod",
      namespace: "observability",
      namespaceLabels: {
        "kubernetes.io/metadata.name": "observability",
        "switchyard.io/otel-collector": "true",
      },
      labels: { app: "otel-collector" },
    };
    for (const svc of SERVICES) {
      expect(canConnect(ps, hub(svc), collector, { port: 4318 })).toBe(true);
      expect(canConnect(ps, hub(svc), collector, { port: 4317 })).toBe(false);
      expect(canConnect(ps, hub(svc), otherNamespacePod, { port: 4318 })).toBe(false);
    }
    expect(canConnect(ps, nats, collector, { port: 4318 })).toBe(false);
  });
});
