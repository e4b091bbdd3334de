/**
 * Writes the monitoring files derived from their sources: the Grafana dashboard JSON from
 * scripts/dashboard.ts, and the PrometheusRule of deploy/k8s/monitoring from the plain rules file
 * deploy/prometheus/switchyard-alerts.yaml (the one to edit). Tests compare the committed files
 * with this output (`npm run monitoring` after a change).
 */
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { parse, stringify } from "yaml";
import { dashboardJson } from "./dashboard.ts";

const ROOT = join(import.meta.dir, "..");
export const RULES_FILE = "deploy/prometheus/switchyard-alerts.yaml";
export const DASHBOARD_FILE = "deploy/grafana/switchyard-dashboard.json";
export const PROMETHEUS_RULE_FILE = "deploy/k8s/monitoring/prometheusrule.yaml";

const RULE_HEADER = `# Generated from ${RULES_FILE} by \`npm run monitoring\`: edit that file, not this one.
# The Prometheus Operator loads it when its ruleSelector matches these labels (kube-prometheus:
# prometheus=k8s, role=alert-rules; kube-prometheus-stack: add release=<your release>).
`;

/** The PrometheusRule holding the plain file's groups. */
export function prometheusRule(rulesText: string): Record<string, unknown> {
  const rules = parse(rulesText) as { groups: unknown[] };
  return {
    apiVersion: "monitoring.coreos.com/v1",
    kind: "PrometheusRule",
    metadata: {
      name: "switchyard",
      labels: {
        "app.kubernetes.io/name": "switchyard",
        "app.kubernetes.io/part-of": "switchyard",
        prometheus: "k8s",
        role: "alert-rules",
      },
    },
    spec: { groups: rules.groups },
  };
}

/** Every generated file: path relative to the repository → content. */
export function generatedMonitoringFiles(): Record<string, string> {
  const rulesText = readFileSync(join(ROOT, RULES_FILE), "utf8");
  return {
    [DASHBOARD_FILE]: `${JSON.stringify(dashboardJson(), null, 2)}\n`,
    [PROMETHEUS_RULE_FILE]: `${RULE_HEADER}${stringify(prometheusRule(rulesText), { lineWidth: 0 })}`,
  };
}

if (import.meta.main) {
  for (const [path, content] of Object.entries(generatedMonitoringFiles())) {
    await mkdir(dirname(join(ROOT, path)), { recursive: true });
    await writeFile(join(ROOT, path), content);
    process.stdout.write(`wrote ${path}\n`);
  }
}
