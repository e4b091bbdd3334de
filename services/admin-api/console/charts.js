import { h } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** A label of a chart's axis or value: HTML text, so it keeps the page's type size at any width. */
const label = (text, attrs = {}) => h("span", { class: "chart-label", ...attrs }, text);

/** A legend entry's colour swatch: the colour comes in through CSSOM (the CSP allows no inline style). */
function legend(series) {
  const el = h(
    "div",
    { class: "legend" },
    series.map((x) => h("span", { "data-color": x.color }, x.name)),
  );
  for (const span of el.children) span.style.setProperty("--c", span.dataset.color);
  return el;
}

/**
 * Series per minute as grouped bars (accepted and completed over the last hour). The bars are an
 * SVG stretched to the panel's width (drawn by hand: the console loads nothing from elsewhere);
 * the axis labels are HTML around it, so they stay readable however wide the panel is.
 */
export function minuteBars(series, labels) {
  const width = 600;
  const height = 160;
  const max = Math.max(1, ...series.flatMap((x) => x.values));
  const n = series[0]?.values.length ?? 0;
  const slot = width / Math.max(1, n);
  const svg = s("svg", {
    class: "chart",
    viewBox: `0 0 ${width} ${height}`,
    preserveAspectRatio: "none",
    role: "img",
    "aria-label": labels.title,
  });
  svg.append(s("title", {}, labels.title));
  svg.append(s("line", { x1: 0, y1: height, x2: width, y2: height, class: "axis" }));
  series.forEach((line, k) => {
    line.values.forEach((v, i) => {
      const barHeight = (height * v) / max;
      svg.append(
        s("rect", {
          x: i * slot + (k * slot) / series.length,
          y: height - barHeight,
          width: Math.max(1, slot / series.length - 1),
          height: barHeight,
          fill: line.color,
        }),
      );
    });
  });
  return h(
    "div",
    { class: "chart-body minute-bars" },
    h(
      "div",
      { class: "y-axis" },
      label(String(max)),
      label(String(Math.round(max / 2))),
      label("0"),
    ),
    svg,
    h("div", { class: "x-axis" }, label(labels.from), label("30 min ago"), label("now")),
    legend(series),
  );
}

/** Horizontal bars of counts by key (jobs by status), one row each, as wide as the panel. */
export function countBars(counts, colors) {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  const max = Math.max(1, ...entries.map(([, n]) => n));
  const body = h(
    "div",
    { class: "chart-body count-bars", role: "img", "aria-label": "Jobs by status" },
    entries.length === 0 ? label("No jobs in the last 24 hours.") : null,
  );
  for (const [key, n] of entries) {
    const fill = h("div", { class: "bar-fill" });
    fill.style.width = `${(100 * n) / max}%`;
    fill.style.background = colors[key] ?? "#8c959f";
    body.append(
      label(key, { class: "chart-label bar-key" }),
      h("div", { class: "bar-track" }, fill),
      label(String(n), { class: "chart-label bar-count" }),
    );
  }
  return body;
}
