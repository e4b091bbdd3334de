import { h } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";

function s(tag, attrs = {}, text) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/**
 * Two series per minute as grouped bars (accepted and completed over the last hour). Drawn in
 * SVG by hand: the console loads nothing from elsewhere.
 */
export function minuteBars(series, labels) {
  const width = 600;
  const height = 160;
  const max = Math.max(1, ...series.flatMap((x) => x.values));
  const n = series[0]?.values.length ?? 0;
  const slot = (width - 40) / Math.max(1, n);
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img" });
  svg.append(s("title", {}, labels.title));
  svg.append(s("text", { x: 0, y: 10 }, String(max)), s("text", { x: 0, y: height - 14 }, "0"));
  series.forEach((line, k) => {
    line.values.forEach((v, i) => {
      const barHeight = ((height - 30) * v) / max;
      svg.append(
        s("rect", {
          x: 36 + i * slot + (k * slot) / series.length,
          y: height - 18 - barHeight,
          width: Math.max(1, slot / series.length - 1),
          height: barHeight,
          fill: line.color,
        }),
      );
    });
  });
  svg.append(
    s("text", { x: 36, y: height - 2 }, labels.from),
    s("text", { x: width - 40, y: height - 2 }, "now"),
  );
  const legend = h(
    "div",
    { class: "legend" },
    series.map((x) => h("span", { style: undefined, "data-color": x.color }, x.name)),
  );
  for (const span of legend.children) span.style.setProperty("--c", span.dataset.color);
  return h("div", {}, svg, legend);
}

/** Horizontal bars of counts by key (jobs by status). */
export function countBars(counts, colors) {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  const max = Math.max(1, ...entries.map(([, n]) => n));
  const rowHeight = 22;
  const width = 600;
  const svg = s("svg", {
    class: "chart",
    viewBox: `0 0 ${width} ${Math.max(rowHeight, entries.length * rowHeight)}`,
    role: "img",
  });
  svg.style.height = `${Math.max(rowHeight, entries.length * rowHeight)}px`;
  svg.append(s("title", {}, "Jobs by status"));
  entries.forEach(([key, n], i) => {
    const y = i * rowHeight;
    svg.append(
      s("text", { x: 0, y: y + 15 }, key),
      s("rect", {
        x: 90,
        y: y + 4,
        width: ((width - 160) * n) / max,
        height: 14,
        fill: colors[key] ?? "#8c959f",
      }),
      s("text", { x: 96 + ((width - 160) * n) / max, y: y + 15 }, String(n)),
    );
  });
  return svg;
}
