import { ApiError, get, post } from "./api.js";
import { badge, confirmAction, h, jobLink, mount, table, time } from "./dom.js";

const FINAL = new Set(["done", "error", "rejected"]);
/** What stands where the operator API left a payload out ({redacted: true}): input and output alike. */
const HIDDEN = "(hidden: needs read_payloads)";
const isRedacted = (value) =>
  value !== null && typeof value === "object" && value.redacted === true;
const show = (value) => {
  if (isRedacted(value)) return HIDDEN;
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
};

/**
 * An event's data as the timeline shows it: payloads left out read as HIDDEN, and the run's
 * metadata points to its own section instead of being repeated.
 */
function eventText(event) {
  const data = { ...event.data };
  for (const key of ["input", "output"]) if (isRedacted(data[key])) data[key] = HIDDEN;
  if (event.type === "run.requested" && data.metadata !== undefined) {
    data.metadata = "(shown under Metadata)";
  }
  return JSON.stringify(data, null, 2);
}

/** A titled section of the job page holding preformatted text. */
const textSection = (title, id, text) => [
  h("h2", {}, title),
  h("div", { class: "panel" }, h("pre", { class: "payload", id }, text)),
];

/** One job: record, links between retries, actions, timeline and callback attempts. */
export async function renderJob(main, jobId, session, go) {
  const { body } = await get(`/jobs/${encodeURIComponent(jobId)}`);
  const { job, timeline, callback_attempts: attempts, links } = body;
  const canAct = session.operator.role === "operator";
  const metadata = timeline.find((e) => e.type === "run.requested")?.data?.metadata;
  const notice = h("div", { id: "action-result" });
  const act = async (action, question) => {
    if (!(await confirmAction(question))) return;
    try {
      const answer = await post(`/jobs/${encodeURIComponent(jobId)}/${action}`);
      if (action === "retry") go(`#/job/${encodeURIComponent(answer.body.job.job_id)}`);
      else await renderJob(main, jobId, session, go);
    } catch (err) {
      mount(
        notice,
        h("div", { class: "notice bad" }, err instanceof ApiError ? err.message : String(err)),
      );
    }
  };
  const redeliver = async () => {
    if (!(await confirmAction(`Send the completion callback of ${jobId} again?`))) return;
    try {
      await post(`/callbacks/${encodeURIComponent(jobId)}/redeliver`);
      mount(notice, h("div", { class: "notice" }, "Redelivery requested."));
    } catch (err) {
      mount(
        notice,
        h("div", { class: "notice bad" }, err instanceof ApiError ? err.message : String(err)),
      );
    }
  };
  const actions = h(
    "div",
    { class: "actions" },
    canAct && !FINAL.has(job.status)
      ? h(
          "button",
          {
            class: "danger",
            id: "cancel-job",
            onclick: () => act("cancel", `Cancel job ${jobId}? It ends as error "cancelled" now.`),
          },
          "Cancel job",
        )
      : null,
    canAct && (job.status === "error" || job.status === "rejected")
      ? h(
          "button",
          {
            id: "retry-job",
            onclick: () =>
              act("retry", `Retry job ${jobId} as a new job with the same route and input?`),
          },
          job.retried_as ? "Open its retry" : "Retry job",
        )
      : null,
    canAct && (job.callback?.status === "failed" || job.callback?.status === "delivered")
      ? h(
          "button",
          { class: "secondary", id: "redeliver-callback", onclick: redeliver },
          "Redeliver callback",
        )
      : null,
  );
  mount(
    main,
    h(
      "h1",
      {},
      "Job ",
      h("span", { class: "mono", id: "job-id" }, job.job_id),
      " ",
      badge(job.status),
    ),
    h(
      "div",
      { class: "panel" },
      h(
        "dl",
        { class: "kv" },
        h("dt", {}, "client"),
        h("dd", {}, job.client_id),
        h("dt", {}, "request id"),
        h("dd", { class: "mono" }, job.request_id),
        h("dt", {}, "route"),
        h("dd", {}, job.route),
        h("dt", {}, "created"),
        h("dd", {}, time(job.created_at)),
        h("dt", {}, "updated"),
        h("dd", {}, time(job.updated_at)),
        job.completed_at ? [h("dt", {}, "completed"), h("dd", {}, time(job.completed_at))] : null,
        job.error
          ? [
              h("dt", {}, "error"),
              h("dd", { id: "job-error" }, `${job.error.code}: ${job.error.message}`),
            ]
          : null,
        job.callback
          ? [
              h("dt", {}, "callback"),
              h("dd", {}, badge(job.callback.status), ` ${job.callback.attempts} attempt(s)`),
            ]
          : null,
        links.retry_of
          ? [h("dt", {}, "retry of"), h("dd", { id: "retry-of" }, jobLink(links.retry_of))]
          : null,
        links.retried_as
          ? [h("dt", {}, "retried as"), h("dd", { id: "retried-as" }, jobLink(links.retried_as))]
          : null,
      ),
    ),
    actions,
    notice,
    job.output !== undefined ? textSection("Output", "job-output", show(job.output)) : null,
    textSection(
      "Metadata",
      "metadata",
      metadata === undefined ? "This run carries no metadata." : show(metadata),
    ),
    h("h2", {}, "Timeline"),
    h(
      "div",
      { class: "panel", id: "timeline" },
      table(
        [
          { title: "seq", cell: (e) => e.seq },
          { title: "stored", cell: (e) => time(e.time) },
          { title: "type", cell: (e) => e.type },
          {
            title: "data",
            class: "wrap",
            cell: eventText,
          },
        ],
        timeline,
      ),
    ),
    h("h2", {}, "Callback attempts"),
    h(
      "div",
      { class: "panel", id: "callback-attempts" },
      table(
        [
          { title: "#", cell: (a) => a.attempt },
          { title: "at", cell: (a) => time(a.at) },
          { title: "outcome", cell: (a) => badge(a.outcome) },
          { title: "HTTP", cell: (a) => a.status_code ?? a.error_class ?? "" },
          {
            title: "latency",
            cell: (a) => (a.duration_ms === undefined ? "" : `${Math.round(a.duration_ms)} ms`),
          },
          { title: "redelivery", cell: (a) => (a.redelivery ? "yes" : "") },
        ],
        attempts,
        job.callback ? "No attempt yet." : "This job has no callback_url.",
      ),
    ),
  );
}
