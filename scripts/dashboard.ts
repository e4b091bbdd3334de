/**
 * The Grafana dashboard over the hub's metrics (deploy/grafana/switchyard-dashboard.json), as
 * data: `npm run monitoring` writes the JSON, a test compares it and checks that every metric it
 * names is one the hub exports (or the prometheus-nats-exporter's).
 * Panels: scripts/dashboard-panels.ts.
 */

import { type PanelSpec, ROWS } from "./dashboard-panels.ts";

// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not JavaScript's.
const DATASOURCE = { type: "prometheus", uid: "${datasource}" };

function panelJson(panel: PanelSpec, id: number, x: number, y: number): Record<string, unknown> {
  const custom =
    panel.type === "timeseries"
      ? {
          fillOpacity: panel.stacked ? 40 : 10,
          stacking: { mode: panel.stacked ? "normal" : "none" },
        }
      : {};
  return {
    id,
    type: panel.type,
    title: panel.title,
    description: panel.description,
    datasource: DATASOURCE,
    gridPos: { h: 8, w: panel.width, x, y },
    fieldConfig: { defaults: { unit: panel.unit, custom }, overrides: [] },
    options: panel.type === "heatmap" ? { calculate: false, yAxis: { unit: "s" } } : {},
    targets: panel.queries.map((q, i) => ({
      refId: String.fromCharCode(65 + i),
      datasource: DATASOURCE,
      expr: q.expr,
      legendFormat: q.legend,
      ...(panel.type === "heatmap" ? { format: "heatmap" } : {}),
      ...(panel.type === "piechart" || panel.type === "stat" ? { instant: true } : {}),
    })),
  };
}

/** The dashboard as Grafana imports it (schemaVersion 39, Grafana 10 and later). */
export function dashboardJson(): Record<string, unknown> {
  const panels: Record<string, unknown>[] = [];
  let id = 1;
  let y = 0;
  for (const row of ROWS) {
    panels.push({
      id: id++,
      type: "row",
      title: row.title,
      collapsed: false,
      gridPos: { h: 1, w: 24, x: 0, y },
      panels: [],
    });
    y += 1;
    let x = 0;
    for (const panel of row.panels) {
      if (x + panel.width > 24) {
        x = 0;
        y += 8;
      }
      panels.push(panelJson(panel, id++, x, y));
      x += panel.width;
    }
    y += 8;
  }
  return {
    uid: "switchyard-hub",
    title: "Switchyard",
    description:
      "Switchyard hub: traffic, latency, callbacks, backlogs, streams (docs/operations.md)",
    tags: ["switchyard", "nats"],
    timezone: "browser",
    schemaVersion: 39,
    version: 1,
    editable: true,
    refresh: "30s",
    time: { from: "now-6h", to: "now" },
    templating: {
      list: [
        {
          name: "datasource",
          label: "Prometheus",
          type: "datasource",
          query: "prometheus",
          current: {},
        },
        {
          name: "route",
          label: "Route",
          type: "query",
          datasource: DATASOURCE,
          query: { query: "label_values(switchyard_jobs_completed_total, route)", refId: "route" },
          definition: "label_values(switchyard_jobs_completed_total, route)",
          includeAll: true,
          multi: true,
          allValue: ".*",
          current: { text: "All", value: "$__all" },
          refresh: 2,
          sort: 1,
        },
      ],
    },
    annotations: { list: [] },
    panels,
  };
}
