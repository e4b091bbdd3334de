import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { delimiter, join, relative } from "node:path";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { StatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { Job } from "kubernetes-models/batch/v1/Job";
import { Ingress } from "kubernetes-models/networking.k8s.io/v1/Ingress";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1/PodDisruptionBudget";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { Secret } from "kubernetes-models/v1/Secret";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { parseAllDocuments } from "yaml";

export const REPO = join(import.meta.dir, "..", "..");
export const DEPLOY = join(REPO, "deploy");
export const K8S = join(DEPLOY, "k8s");
export const OVERLAYS = ["base", "overlays/dev", "overlays/prod", "overlays/prod-keda"] as const;

/**
 * The hub's Deployments (switchyard-<name>, component <name>) and the services each runs
 * (`serve <services>`): the read models share one process.
 */
export const HUB_DEPLOYMENTS = {
  ingress: ["ingress"],
  "read-models": ["projector", "indexer"],
  executor: ["executor"],
  callback: ["callback"],
} as const;
export type HubDeployment = keyof typeof HUB_DEPLOYMENTS;
export const HUB_DEPLOYMENT_NAMES = Object.keys(HUB_DEPLOYMENTS) as readonly HubDeployment[];
export type Overlay = (typeof OVERLAYS)[number];

export interface K8sObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    readonly name: string;
    readonly namespace?: string;
    readonly labels?: Record<string, string>;
  };
  readonly [key: string]: unknown;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Parses every document of a YAML string; any YAML error throws with the file name. */
export function parseYamlDocs(text: string, source: string): unknown[] {
  const docs = parseAllDocuments(text);
  const out: unknown[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      throw new Error(`${source}: ${doc.errors.map((e) => e.message).join("; ")}`);
    }
    const value = doc.toJS();
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

export function asK8sObject(value: unknown, source: string): K8sObject {
  if (!isRecord(value)) throw new Error(`${source}: a document is not a mapping`);
  const { apiVersion, kind, metadata } = value;
  if (typeof apiVersion !== "string" || typeof kind !== "string") {
    throw new Error(`${source}: a document lacks apiVersion or kind`);
  }
  if (!isRecord(metadata) || typeof metadata.name !== "string" || metadata.name === "") {
    throw new Error(`${source}: ${kind} lacks metadata.name`);
  }
  return value as K8sObject;
}

/** All files under a directory, as paths relative to it. */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const full = join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else out.push(relative(dir, full));
    }
  };
  walk(dir);
  return out.sort();
}

type Validator = (obj: unknown) => void;
// Types from kubernetes-models' OpenAPI schemas. Its validators check types, formats, enums and
// required fields; they do not reject unknown fields, so the policy tests check the fields
// that matter by name.
const VALIDATORS: Record<string, Validator> = {
  "apps/v1/Deployment": (o) => new Deployment(o as Deployment).validate(),
  "apps/v1/StatefulSet": (o) => new StatefulSet(o as StatefulSet).validate(),
  "batch/v1/Job": (o) => new Job(o as Job).validate(),
  "autoscaling/v2/HorizontalPodAutoscaler": (o) =>
    new HorizontalPodAutoscaler(o as HorizontalPodAutoscaler).validate(),
  "networking.k8s.io/v1/Ingress": (o) => new Ingress(o as Ingress).validate(),
  "networking.k8s.io/v1/NetworkPolicy": (o) => new NetworkPolicy(o as NetworkPolicy).validate(),
  "policy/v1/PodDisruptionBudget": (o) =>
    new PodDisruptionBudget(o as PodDisruptionBudget).validate(),
  "v1/ConfigMap": (o) => new ConfigMap(o as ConfigMap).validate(),
  "v1/Namespace": (o) => new Namespace(o as Namespace).validate(),
  "v1/Secret": (o) => new Secret(o as Secret).validate(),
  "v1/Service": (o) => new Service(o as Service).validate(),
  "v1/ServiceAccount": (o) => new ServiceAccount(o as ServiceAccount).validate(),
};

const SEVERITIES = new Set(["critical", "warning", "info"]);
const DURATION = /^(\d+(ms|s|m|h|d|w|y))+$/;

/** A PrometheusRule's groups: named, each rule an alert or a recording rule with an expr. */
function validatePrometheusRule(o: unknown): void {
  if (!isRecord(o) || !isRecord(o.spec) || !Array.isArray(o.spec.groups)) {
    throw new Error("PrometheusRule needs spec.groups");
  }
  const names = new Set<string>();
  for (const group of o.spec.groups) {
    if (!isRecord(group) || typeof group.name !== "string" || !Array.isArray(group.rules)) {
      throw new Error("every group needs a name and rules");
    }
    if (names.has(group.name)) throw new Error(`group ${group.name} appears twice`);
    names.add(group.name);
    for (const rule of group.rules) {
      if (!isRecord(rule) || typeof rule.expr !== "string" || rule.expr.trim() === "") {
        throw new Error(`a rule of ${group.name} has no expr`);
      }
      if ((typeof rule.alert === "string") === (typeof rule.record === "string")) {
        throw new Error(`a rule of ${group.name} must be an alert or a record`);
      }
      if (rule.for !== undefined && !DURATION.test(String(rule.for))) {
        throw new Error(`${String(rule.alert)}: for is not a duration`);
      }
      if (typeof rule.alert !== "string") continue;
      const labels = isRecord(rule.labels) ? rule.labels : {};
      const annotations = isRecord(rule.annotations) ? rule.annotations : {};
      if (!SEVERITIES.has(String(labels.severity))) {
        throw new Error(`${rule.alert}: severity must be critical, warning or info`);
      }
      if (typeof annotations.summary !== "string" || typeof annotations.description !== "string") {
        throw new Error(`${rule.alert}: needs a summary and a description`);
      }
    }
  }
}

/** Kinds that are not core Kubernetes (no schema in kubernetes-models) and their own checks. */
const CUSTOM_KINDS: Record<string, Validator> = {
  "monitoring.coreos.com/v1/PrometheusRule": validatePrometheusRule,
  "keda.sh/v1alpha1/ScaledObject": (o) => {
    if (!isRecord(o) || !isRecord(o.spec)) throw new Error("ScaledObject without spec");
    const { scaleTargetRef, triggers, minReplicaCount, maxReplicaCount } = o.spec;
    if (!isRecord(scaleTargetRef) || typeof scaleTargetRef.name !== "string") {
      throw new Error("ScaledObject spec.scaleTargetRef.name missing");
    }
    if (typeof minReplicaCount !== "number" || typeof maxReplicaCount !== "number") {
      throw new Error("ScaledObject needs numeric minReplicaCount and maxReplicaCount");
    }
    if (minReplicaCount > maxReplicaCount) throw new Error("ScaledObject min > max");
    if (!Array.isArray(triggers) || triggers.length === 0) throw new Error("no triggers");
    for (const trigger of triggers) {
      if (!isRecord(trigger) || trigger.type !== "nats-jetstream" || !isRecord(trigger.metadata)) {
        throw new Error("ScaledObject trigger must be nats-jetstream with metadata");
      }
      for (const key of ["natsServerMonitoringEndpoint", "account", "stream", "consumer"]) {
        if (typeof trigger.metadata[key] !== "string" || trigger.metadata[key] === "") {
          throw new Error(`nats-jetstream trigger lacks ${key}`);
        }
      }
      // KEDA reads every metadata value as a string.
      for (const [key, value] of Object.entries(trigger.metadata)) {
        if (typeof value !== "string") throw new Error(`trigger metadata ${key} is not a string`);
      }
    }
  },
};

/** Validates one object against its schema; throws with the object's identity on failure. */
export function validateObject(obj: K8sObject): void {
  const key = `${obj.apiVersion}/${obj.kind}`;
  const validator = VALIDATORS[key] ?? CUSTOM_KINDS[key];
  if (!validator) throw new Error(`no schema known for ${key} (${obj.metadata.name})`);
  try {
    validator(obj);
  } catch (err) {
    throw new Error(`${key} ${obj.metadata.name}: ${err instanceof Error ? err.message : err}`);
  }
}

export function isCustomKind(obj: K8sObject): boolean {
  return `${obj.apiVersion}/${obj.kind}` in CUSTOM_KINDS;
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter).filter(Boolean)) {
    const candidate = join(dir, name);
    if (existsSync(candidate)) return candidate;
  }
  return undefined;
}

export interface KustomizeTool {
  /** The command line before the directory argument. */
  readonly command: readonly string[];
  readonly description: string;
}

export const KUSTOMIZE_INSTALL_HINT =
  "No kustomize found. CI installs Debian's kubectl: `apt-get install -y kubernetes-client` " +
  "(kubectl 1.20, kustomize v2.0.3). Or set SWITCHYARD_KUBECTL=/path/to/kubectl, or put " +
  "kustomize or kubectl on PATH.";

/**
 * Finds something that renders kustomizations: $SWITCHYARD_KUBECTL, then a standalone `kustomize`,
 * then `kubectl` (which embeds kustomize) on PATH. Throws with the install hint when there is none.
 */
export function findKustomize(): KustomizeTool {
  const explicit = process.env.SWITCHYARD_KUBECTL;
  const kubectl = explicit || onPath("kubectl");
  const kustomize = explicit ? undefined : onPath("kustomize");
  if (kustomize) {
    return { command: [kustomize, "build"], description: describe([kustomize, "version"]) };
  }
  if (kubectl) {
    return {
      command: [kubectl, "kustomize"],
      description: describe([kubectl, "version", "--client"]),
    };
  }
  throw new Error(KUSTOMIZE_INSTALL_HINT);
}

function describe(cmd: string[]): string {
  const run = Bun.spawnSync(cmd, { stdout: "pipe", stderr: "pipe" });
  const text = `${run.stdout.toString()}${run.stderr.toString()}`;
  const kustomize = /Kustomize Version: (\S+)/.exec(text)?.[1];
  const kubectl = (/GitVersion:"([^"]+)"/.exec(text) ?? /Client Version: (\S+)/.exec(text))?.[1];
  return [
    cmd[0],
    kubectl ? `kubectl ${kubectl}` : text.trim().split("\n")[0],
    // kubectl < 1.21 embeds kustomize v2.0.3 and does not print its version.
    kustomize
      ? `kustomize ${kustomize}`
      : /^v1\.(1\d|20)\./.test(kubectl ?? "")
        ? "kustomize v2.0.3 (embedded)"
        : "",
  ]
    .filter(Boolean)
    .join(", ");
}

const renderCache = new Map<string, K8sObject[]>();

/** Renders an overlay (relative to deploy/k8s) with the real kustomize and parses the output. */
export function render(overlay: Overlay | "monitoring"): K8sObject[] {
  const cached = renderCache.get(overlay);
  if (cached) return cached;
  const tool = findKustomize();
  const run = Bun.spawnSync([...tool.command, join(K8S, overlay)], {
    stdout: "pipe",
    stderr: "pipe",
  });
  if (run.exitCode !== 0) {
    throw new Error(`kustomize ${overlay} failed (${tool.description}):\n${run.stderr.toString()}`);
  }
  const objects = parseYamlDocs(run.stdout.toString(), `rendered ${overlay}`).map((d) =>
    asK8sObject(d, `rendered ${overlay}`),
  );
  renderCache.set(overlay, objects);
  return objects;
}

export function readText(path: string): string {
  return readFileSync(path, "utf8");
}

export function byKind<T = K8sObject>(objects: readonly K8sObject[], kind: string): T[] {
  return objects.filter((o) => o.kind === kind) as unknown as T[];
}

export function named<T = K8sObject>(objects: readonly K8sObject[], kind: string, name: string): T {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name}`);
  return found as unknown as T;
}

/** Does a matchLabels/matchExpressions selector select these labels? */
export function selects(
  selector:
    | {
        matchLabels?: Record<string, string>;
        matchExpressions?: { key: string; operator: string; values?: string[] }[];
      }
    | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!selector) return false;
  const have = labels ?? {};
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (have[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const value = have[e.key];
    const values = e.values ?? [];
    const ok =
      e.operator === "In"
        ? value !== undefined && values.includes(value)
        : e.operator === "NotIn"
          ? value === undefined || !values.includes(value)
          : e.operator === "Exists"
            ? value !== undefined
            : e.operator === "DoesNotExist"
              ? value === undefined
              : false;
    if (!ok) return false;
  }
  return true;
}
