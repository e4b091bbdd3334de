import { get } from "./api.js";
import { countBars, minuteBars } from "./charts.js";
import { h, mount, table } from "./dom.js";

const STATUS_COLORS = {
  done: "#1a7f37",
  error: "#b42318",
  rejected: "#cf222e",
  running: "#9a6700",
  dispatched: "#bf8700",
  queued: "#8c959f",
};

/** The success rate, or that there was nothing to rate (a rate of no callbacks is not 0 %). */
const successRate = (x) => (x === null ? "no callbacks" : `${(x * 100).toFixed(1)} %`);
const card = (label, value, id) =>
  h(
    "div",
    { class: "card", id },
    h("div", { class: "label" }, label),
    h("div", { class: "value" }, value),
  );

/** The overview: throughput, jobs by status, backlogs, lag, callback success; refreshed by the caller. */
export async function renderOverview(main) {
  const { body } = await get("/overview");
  const lagAge =
    body.lag.index_age_ms === null ? "never" : `${(body.lag.index_age_ms / 1000).toFixed(1)} s ago`;
  mount(
    main,
    h("h1", {}, "Overview"),
    h(
      "div",
      { class: "cards" },
      card("Accepted / s (last minute)", body.rates.accepted_per_s.toFixed(2), "card-accepted"),
      card("Completed / s (last minute)", body.rates.completed_per_s.toFixed(2), "card-completed"),
      card("Projector lag (events)", body.lag.projector_events ?? "–", "card-projector-lag"),
      card("Index lag (events)", `${body.lag.index_events}`, "card-index-lag"),
      card("Index updated", lagAge, "card-index-age"),
      card(
        "Callback success (24 h)",
        successRate(body.callbacks_24h.success_rate),
        "card-callbacks",
      ),
    ),
    h(
      "div",
      { class: "panel chart-panel", id: "chart-per-minute" },
      h("h2", {}, "Jobs per minute, last hour"),
      minuteBars(
        [
          { name: "accepted", color: "#1f4e79", values: body.per_minute.accepted },
          { name: "completed", color: "#1a7f37", values: body.per_minute.completed },
        ],
        { title: "Jobs accepted and completed per minute", from: "60 min ago" },
      ),
    ),
    h(
      "div",
      { class: "panel chart-panel", id: "chart-by-status" },
      h("h2", {}, "Jobs of the last 24 hours by status"),
      countBars(body.jobs_24h, STATUS_COLORS),
    ),
    h(
      "div",
      { class: "panel" },
      h("h2", {}, "Consumer backlogs"),
      table(
        [
          { title: "stream", cell: (c) => c.stream },
          { title: "consumer", cell: (c) => c.name },
          { title: "pending", cell: (c) => c.pending },
          { title: "ack pending", cell: (c) => c.ack_pending },
          { title: "redelivered", cell: (c) => c.redelivered },
        ],
        body.consumers,
      ),
    ),
    h(
      "p",
      { class: "muted" },
      `Updated ${new Date(body.now).toLocaleTimeString(undefined, { hour12: false })}; refreshes every 5 s while this tab is visible.`,
    ),
  );
}
