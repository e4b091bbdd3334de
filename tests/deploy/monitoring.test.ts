import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse, stringify } from "yaml";
import {
  DASHBOARD_FILE,
  generatedMonitoringFiles,
  PROMETHEUS_RULE_FILE,
  RULES_FILE,
} from "../../scripts/monitoring.ts";
import { generateWebhookSecret } from "../../shared/webhooks/index.ts";
import { startHub } from "../helpers/hub.ts";
import { scrapeHub } from "../helpers/prom.ts";
import { waitFor } from "../helpers/wait.ts";
import { ALERT_SCENARIOS, alertTestFile } from "./alert-scenarios.ts";
import { REPO, render, validateObject } from "./k8s.ts";
import {
  asRecordingRules,
  groupingLabelsOf,
  legendLabelsOf,
  NATS_EXPORTER_METRICS,
  promtool,
  type Selector,
  selectorsOf,
  substituteGrafanaVariables,
  TARGET_LABELS,
} from "./promql.ts";

interface Rule {
  readonly alert?: string;
  readonly record?: string;
  readonly expr: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}
interface RuleGroups {
  readonly groups: { readonly name: string; readonly rules: Rule[] }[];
}
interface Target {
  readonly expr: string;
  readonly legendFormat: string;
  readonly refId: string;
}
interface Panel {
  readonly id: number;
  readonly type: string;
  readonly title: string;
  readonly gridPos: { h: number; w: number; x: number; y: number };
  readonly datasource?: { uid: string };
  readonly targets?: Target[];
}

const read = (path: string) => readFileSync(join(REPO, path), "utf8");
const rulesText = read(RULES_FILE);
const rules = parse(rulesText) as RuleGroups;
const allRules = rules.groups.flatMap((g) => g.rules);
const dashboard = JSON.parse(read(DASHBOARD_FILE)) as {
  uid: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; definition?: string }[] };
};
const queryPanels = dashboard.panels.filter((p) => p.type !== "row");
const targets = queryPanels.flatMap((p) => p.targets ?? []);

describe("deploy/: Grafana dashboard and Prometheus alert rules", () => {
  test("the dashboard and the PrometheusRule are generated from their sources (npm run monitoring)", () => {
    for (const [path, content] of Object.entries(generatedMonitoringFiles())) {
      expect(read(path)).toBe(content);
    }
  });

  test("the rules pass `promtool check rules`, as a plain file and as the PrometheusRule's groups", () => {
    const plain = promtool((dir) => ["check", "rules", join(dir, "rules.yaml")], {
      "rules.yaml": rulesText,
    });
    expect(plain.output).toContain(`SUCCESS: ${allRules.length} rules found`);
    expect(plain.code).toBe(0);
    const objects = render("monitoring");
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      "PrometheusRule/switchyard",
    ]);
    const rule = objects[0] as unknown as { spec: RuleGroups; metadata: { namespace: string } };
    validateObject(objects[0] as (typeof objects)[0]);
    expect(rule.metadata.namespace).toBe("switchyard");
    expect(rule.spec).toEqual(rules);
    const operator = promtool((dir) => ["check", "rules", join(dir, "rules.yaml")], {
      "rules.yaml": stringify(rule.spec),
    });
    expect(operator.code).toBe(0);
    expect(read(PROMETHEUS_RULE_FILE)).toContain("kind: PrometheusRule");
  });

  test("the alerts cover what operators need and fire only when they should (promtool test rules)", () => {
    const names = allRules.map((r) => r.alert);
    for (const needed of [
      "SwitchyardTargetDown",
      "SwitchyardServiceMissing",
      "SwitchyardBacklogGrowing",
      "SwitchyardWorkQueueGrowing",
      "SwitchyardProjectorLagging",
      "SwitchyardCallbackFailureRate",
      "SwitchyardStreamNearLimit",
      "NatsJetStreamStorageNearLimit",
    ]) {
      expect(names).toContain(needed);
    }
    // Annotations are checked by `check rules`; the unit tests compare which alerts fire.
    const bare = {
      groups: rules.groups.map((g) => ({
        ...g,
        rules: g.rules.map(({ annotations: _a, ...rule }) => rule),
      })),
    };
    const run = promtool((dir) => ["test", "rules", join(dir, "tests.yaml")], {
      "rules.yaml": stringify(bare),
      "tests.yaml": alertTestFile("rules.yaml"),
    });
    expect(run.output).toContain("SUCCESS");
    expect(run.code).toBe(0);
    // Every alert has at least one scenario where it fires.
    const fired = new Set(ALERT_SCENARIOS.filter((s) => s.expect.length > 0).map((s) => s.alert));
    expect([...fired].sort()).toEqual((names as string[]).sort());
  });

  test("the dashboard: every query parses, panels are laid out, and it shows what operators need", () => {
    const exprs = targets.map((t) => substituteGrafanaVariables(t.expr));
    const parsed = promtool((dir) => ["check", "rules", join(dir, "dashboard.yaml")], {
      "dashboard.yaml": asRecordingRules(exprs),
    });
    expect(parsed.output).toContain(`SUCCESS: ${exprs.length} rules found`);
    expect(parsed.code).toBe(0);
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of queryPanels) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax.
      expect(panel.datasource?.uid).toBe("${datasource}");
      expect(panel.targets?.length).toBeGreaterThan(0);
      expect(panel.gridPos.x + panel.gridPos.w).toBeLessThanOrEqual(24);
      const refIds = (panel.targets ?? []).map((t) => t.refId);
      expect(new Set(refIds).size).toBe(refIds.length);
    }
    expect(dashboard.templating.list.map((v) => `${v.name}:${v.type}`)).toEqual([
      "datasource:datasource",
      "route:query",
    ]);
    const all = targets.map((t) => t.expr).join("\n");
    for (const needed of [
      "switchyard_runs_total[", // accepted rate
      "switchyard_jobs_completed_total", // completed rate and status mix
      "switchyard_job_completion_seconds_bucket", // submit → done
      "switchyard_callback_completion_seconds_bucket", // submit → callback
      "switchyard_consumer_pending", // backlogs
      'switchyard_callback_attempts_total{outcome="delivered"}', // callback success
      "switchyard_projector_lag_seconds",
      "jetstream_stream_total_bytes", // NATS stream usage (prometheus-nats-exporter)
    ]) {
      expect(all).toContain(needed);
    }
  });

  test("every hub metric the dashboard and rules name is one a running hub exports, with those labels", async () => {
    const executor = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => Response.json({ output: "ok" }),
    });
    const receiver = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => new Response(null, { status: 204 }),
    });
    const token = "monitoring-token-0123456789abcdef";
    try {
      await using hub = await startHub({
        clients: [
          { id: "mon", token, routes: ["m.*"], callbackSecrets: [generateWebhookSecret()] },
        ],
        natsOptions: { events_max_bytes: 64 * 1024 * 1024 },
        yaml: `
callbacks: { allow_cidrs: ["127.0.0.1/32"], timeout: 2s }
routes:
  - key: m.http
    executor: { kind: http, url: "http://127.0.0.1:${executor.port}/", secret: ${generateWebhookSecret()} }
`,
      });
      const res = await hub.run(
        {
          request_id: "m-1",
          route: "m.http",
          input: "x",
          callback_url: `http://127.0.0.1:${receiver.port}/cb`,
        },
        token,
      );
      expect(res.status).toBe(202);
      await waitFor(
        "the callback recorded",
        async () =>
          (await scrapeHub(hub)).text.includes("switchyard_callback_completion_seconds_count"),
        { timeoutMs: 15_000 },
      );
      checkNamesAndLabels((await scrapeHub(hub)).families);
    } finally {
      executor.stop(true);
      receiver.stop(true);
    }
  });
});

/** Families the test hub cannot give samples (no stream here has a max_msgs). */
const NO_SAMPLES_HERE = new Set(["switchyard_stream_limit_messages"]);

function checkNamesAndLabels(families: Awaited<ReturnType<typeof scrapeHub>>["families"]): void {
  const labelsOf = (selector: Selector): readonly string[] => {
    const { metric } = selector;
    if (metric === "up") return ["app_kubernetes_io_part_of", ...TARGET_LABELS];
    const exporter = NATS_EXPORTER_METRICS[metric];
    if (exporter) return [...exporter, ...TARGET_LABELS];
    if (!metric.startsWith("switchyard_")) {
      throw new Error(
        `${metric} is neither a hub metric, up, nor a prometheus-nats-exporter series`,
      );
    }
    const base = metric.replace(/_(bucket|sum|count)$/, "");
    const family = families.get(metric) ?? families.get(base);
    if (!family || (family !== families.get(metric) && family.type !== "histogram")) {
      throw new Error(`${metric} is not exported by the hub`);
    }
    if (family.samples.length === 0) {
      if (!NO_SAMPLES_HERE.has(metric)) throw new Error(`${metric} has no samples to check labels`);
      return ["stream", ...TARGET_LABELS];
    }
    const seen = new Set(family.samples.flatMap((s) => Object.keys(s.labels)));
    return [...seen, ...TARGET_LABELS];
  };
  const check = (where: string, expr: string, templates: readonly string[]) => {
    const selectors = selectorsOf(expr);
    expect(selectors.length).toBeGreaterThan(0);
    const union = new Set<string>();
    for (const selector of selectors) {
      const known = labelsOf(selector);
      for (const label of selector.labels) {
        if (!known.includes(label))
          throw new Error(`${where}: ${selector.metric} has no label ${label}`);
      }
      for (const label of known) union.add(label);
    }
    for (const label of [...groupingLabelsOf(expr), ...templates.flatMap(legendLabelsOf)]) {
      if (label !== "le" && !union.has(label)) {
        throw new Error(`${where}: label ${label} is on none of its metrics`);
      }
    }
  };
  for (const panel of queryPanels) {
    for (const t of panel.targets ?? []) check(`panel ${panel.title}`, t.expr, [t.legendFormat]);
  }
  for (const v of dashboard.templating.list) {
    // label_values(metric, label): the label must be on the metric.
    const label = /label_values\([^,]+,\s*(\w+)\)/.exec(v.definition ?? "")?.[1];
    if (v.definition) check(`variable ${v.name}`, v.definition, label ? [`{{${label}}}`] : []);
  }
  for (const rule of allRules) {
    check(`rule ${rule.alert ?? rule.record}`, rule.expr, Object.values(rule.annotations ?? {}));
  }
}
