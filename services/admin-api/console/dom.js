/**
 * DOM helpers. Every text is set as text (textContent), never parsed as HTML: job data comes
 * from callers and executors and must not become markup.
 */

/** Builds an element: h("td", { class: "x" }, "text", child). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces the content of `el`. */
export function mount(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== undefined && c !== null));
}

/** A status badge. */
export function badge(status) {
  return h("span", { class: `status ${status}` }, status);
}

/** A link to a job's page. */
export function jobLink(jobId) {
  return h("a", { href: `#/job/${encodeURIComponent(jobId)}`, class: "mono" }, jobId);
}

/** "2026-11-23T12:00:00.000Z" shown in the browser's time zone, second precision. */
export function time(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(undefined, { hour12: false });
}

/** Asks for a confirmation in the page's dialog; resolves true on Confirm. */
export function confirmAction(text) {
  const dialog = document.getElementById("confirm");
  document.getElementById("confirm-text").textContent = text;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
  });
}

/**
 * A table with a header row and one row per item. On a narrow screen each row is a card of
 * "label value" lines (style.css), so no column needs sideways scrolling.
 */
export function table(columns, rows, empty = "Nothing here.") {
  if (rows.length === 0) return h("p", { class: "muted" }, empty);
  return h(
    "table",
    {},
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        columns.map((c) => h("th", {}, c.title)),
      ),
    ),
    h(
      "tbody",
      {},
      rows.map((row) =>
        h(
          "tr",
          {},
          // The label lets a narrow screen show each row as a stacked card (style.css).
          // An empty cell has no child at all, so a stacked card leaves its line out (:empty).
          columns.map((c) => {
            const value = c.cell(row);
            return h("td", { class: c.class, "data-label": c.title }, value === "" ? null : value);
          }),
        ),
      ),
    ),
  );
}
