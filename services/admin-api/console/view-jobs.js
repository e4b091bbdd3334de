import { get } from "./api.js";
import { badge, h, jobLink, mount, table, time } from "./dom.js";

const STATUSES = ["queued", "dispatched", "running", "done", "error", "rejected"];
const TEXT_FILTERS = [
  ["client", "Client"],
  ["route", "Route"],
  ["error_code", "Error code"],
  ["tenant", "Tenant"],
  ["request_id", "Request id"],
];

/** Local datetime input → RFC 3339 (the API takes RFC 3339 only). */
const toRfc3339 = (local) => (local ? new Date(local).toISOString() : "");
const toLocal = (iso) => {
  if (!iso) return "";
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

/** The filter form; submitting it changes the hash (so the search is a link). */
function filterForm(params, onSearch) {
  const form = h(
    "form",
    { class: "filters", id: "job-filters" },
    TEXT_FILTERS.map(([key, label]) =>
      h("label", {}, label, h("input", { name: key, value: params.get(key) ?? "", size: 14 })),
    ),
    h(
      "label",
      {},
      "Status",
      h(
        "select",
        // Every status visible at once: nothing to scroll inside the list.
        { name: "status", multiple: true, size: STATUSES.length },
        STATUSES.map((s) =>
          h("option", { value: s, selected: params.getAll("status").includes(s) }, s),
        ),
      ),
    ),
    h(
      "label",
      {},
      "Created after",
      h("input", {
        type: "datetime-local",
        name: "created_after",
        value: toLocal(params.get("created_after")),
      }),
    ),
    h(
      "label",
      {},
      "Created before",
      h("input", {
        type: "datetime-local",
        name: "created_before",
        value: toLocal(params.get("created_before")),
      }),
    ),
    h("button", { type: "submit" }, "Search"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [key, value] of new FormData(form)) {
      if (value === "") continue;
      next.append(key, key.startsWith("created_") ? toRfc3339(value) : value);
    }
    onSearch(next);
  });
  return form;
}

export function jobRows(jobs) {
  return table(
    [
      { title: "job", cell: (j) => jobLink(j.job_id) },
      { title: "client", cell: (j) => j.client_id },
      { title: "route", cell: (j) => j.route },
      { title: "status", cell: (j) => badge(j.status) },
      { title: "error", cell: (j) => j.error?.code ?? "" },
      { title: "callback", cell: (j) => (j.callback ? badge(j.callback.status) : "") },
      { title: "created", cell: (j) => time(j.created_at) },
    ],
    jobs,
    "No jobs match.",
  );
}

/** Job search with the filters, newest first, page by page (the cursor is kept in the hash). */
export async function renderJobs(main, params, navigate, path = "/jobs", title = "Jobs") {
  const { body, headers } = await get(path, params);
  const lag = Number(headers.get("switchyard-index-lag") ?? 0);
  const pager = h(
    "div",
    { class: "pager" },
    params.has("cursor")
      ? h(
          "button",
          {
            class: "secondary",
            id: "first-page",
            onclick: () => {
              const p = new URLSearchParams(params);
              p.delete("cursor");
              navigate(p);
            },
          },
          "First page",
        )
      : null,
    body.next_cursor
      ? h(
          "button",
          {
            class: "secondary",
            id: "next-page",
            onclick: () => {
              const p = new URLSearchParams(params);
              p.set("cursor", body.next_cursor);
              navigate(p);
            },
          },
          "Next page",
        )
      : null,
    h(
      "span",
      {},
      `${body.jobs.length} shown${lag > 0 ? `; the index is ${lag} events behind` : ""}`,
    ),
  );
  mount(
    main,
    h("h1", {}, title),
    filterForm(params, navigate),
    h("div", { class: "panel", id: "job-results" }, jobRows(body.jobs)),
    pager,
  );
  return body.jobs;
}
