import { ApiError, post } from "./api.js";
import { confirmAction, h, mount } from "./dom.js";
import { renderJobs } from "./view-jobs.js";

const WHERE_KEYS = [
  "client",
  "status",
  "route",
  "error_code",
  "tenant",
  "request_id",
  "created_after",
  "created_before",
];

/** Failed callbacks with the search filters, and redelivery of everything the filter matches. */
export async function renderCallbacks(main, params, navigate) {
  await renderJobs(main, params, navigate, "/callbacks/failed", "Failed callbacks");
  const notice = h("div", { id: "bulk-result" });
  const where = {};
  for (const key of WHERE_KEYS) {
    const values = params.getAll(key);
    if (values.length > 0) where[key] = values.length === 1 ? values[0] : values;
  }
  const bulk = async () => {
    try {
      const dry = await post("/callbacks/redeliver", { where, dry_run: true });
      const n = dry.body.matched;
      if (n === 0) {
        mount(notice, h("div", { class: "notice" }, "No failed callback matches."));
        return;
      }
      if (!(await confirmAction(`Redeliver ${n} failed callback(s) matching this filter?`))) return;
      const done = await post("/callbacks/redeliver", { where });
      mount(
        notice,
        h("div", { class: "notice" }, `${done.body.requested} redelivery request(s) made.`),
      );
    } catch (err) {
      mount(
        notice,
        h("div", { class: "notice bad" }, err instanceof ApiError ? err.message : String(err)),
      );
    }
  };
  const filters = main.querySelector("#job-filters");
  // Failed callbacks are always the filter here.
  filters?.querySelector('select[name="status"]')?.closest("label")?.remove();
  main.insertBefore(
    h(
      "div",
      { class: "actions" },
      h(
        "button",
        { id: "bulk-redeliver", class: "danger", onclick: bulk },
        "Redeliver all matching…",
      ),
    ),
    filters?.nextSibling ?? null,
  );
  main.insertBefore(notice, main.querySelector("#job-results"));
}
