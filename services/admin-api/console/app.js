/**
 * The Switchyard console: a self-contained page (no CDN, no external fonts) over the operator
 * API. Hash routes: #/ overview, #/jobs?…, #/job/<id>, #/callbacks?…. The overview refreshes
 * every 5 s while the tab is visible; nothing else polls.
 */
import { ApiError, login, logout, state } from "./api.js";
import { h, mount } from "./dom.js";
import { renderCallbacks } from "./view-callbacks.js";
import { renderJob } from "./view-job.js";
import { renderJobs } from "./view-jobs.js";
import { renderOverview } from "./view-overview.js";

const CONSOLE_BASE = new URL(".", location.href).pathname.replace(/\/$/, "");
const main = document.getElementById("main");
const REFRESH_MS = 5_000;
let session;
let timer;
/** Counts navigations: a page whose render began before the latest one is not shown. */
let renders = 0;

function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

/** Why a login was refused, in an operator's words (the hub's detail is for API callers). */
function refusal(err) {
  if (!(err instanceof ApiError))
    return `The hub could not be reached (${String(err)}). Try again.`;
  if (err.status === 401) {
    return "This token was not accepted. Check it for a typo: it must be a current operator token, not a client token.";
  }
  if (err.status === 429) {
    return "Too many failed logins from this address. Wait a minute, then try again.";
  }
  if (err.status === 503)
    return "The hub cannot check tokens right now (NATS is away). Try again shortly.";
  return err.message;
}

function showLogin(message) {
  renders++; // a page still loading is not shown over the login
  document.getElementById("nav").hidden = true;
  mount(document.getElementById("who"));
  const input = h("input", {
    type: "password",
    name: "token",
    id: "token",
    autocomplete: "off",
    placeholder: "operator token",
    "aria-label": "Operator token",
  });
  const error = h("div", { id: "login-status", role: "alert" });
  const say = (text) =>
    mount(error, text ? h("div", { class: "notice bad", id: "login-error" }, text) : null);
  say(message);
  const submit = h("button", { type: "submit" }, "Log in");
  const form = h(
    "form",
    { class: "login", id: "login" },
    h("h1", {}, "Operator login"),
    error,
    input,
    submit,
    h(
      "p",
      { class: "muted" },
      "An operator token from switchyard.yaml (operators). Client tokens do not work here.",
    ),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    submit.disabled = true;
    try {
      await login(CONSOLE_BASE, input.value);
      await start();
    } catch (err) {
      // The token stays in the field: a typo is corrected, not typed again.
      say(refusal(err));
      submit.disabled = false;
      input.focus();
      input.select();
    }
  });
  mount(main, form);
  input.focus();
}

function header() {
  document.getElementById("nav").hidden = false;
  const op = session.operator;
  mount(
    document.getElementById("who"),
    h("span", { id: "operator" }, `${op.id} (${op.role}${op.read_payloads ? ", payloads" : ""})`),
    h(
      "button",
      {
        id: "logout",
        onclick: async () => {
          await logout(CONSOLE_BASE);
          session = undefined;
          showLogin();
        },
      },
      "Log out",
    ),
  );
}

/** Shows `path` again after REFRESH_MS, if it is still the page shown and the tab is visible. */
function refreshLater(path) {
  timer = setTimeout(() => {
    if (document.visibilityState === "visible" && location.hash.replace(/^#/, "") === path) route();
  }, REFRESH_MS);
}

async function route() {
  clearTimeout(timer);
  if (!session) return;
  const seq = ++renders;
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query);
  const section = path.startsWith("/job/") ? "jobs" : path.slice(1) || "overview";
  for (const a of document.querySelectorAll("[data-nav]"))
    a.classList.toggle("active", a.dataset.nav === section);
  // Each page is built in a container of its own and shown once complete, and only if no later
  // navigation began meanwhile: a slow answer (the overview's poll, a page left at once) never
  // replaces the page the address shows, and no page is seen half-built.
  const view = h("div", { class: "view" });
  let poll = false;
  try {
    if (path === "/jobs") await renderJobs(view, params, (p) => go(`#/jobs?${p}`));
    else if (path === "/callbacks")
      await renderCallbacks(view, params, (p) => go(`#/callbacks?${p}`));
    else if (path.startsWith("/job/"))
      await renderJob(view, decodeURIComponent(path.slice(5)), session, go);
    else {
      await renderOverview(view);
      poll = true;
    }
    if (seq !== renders) return;
    mount(main, view);
    if (poll) refreshLater(path);
  } catch (err) {
    if (seq !== renders) return;
    if (err instanceof ApiError && err.status === 401)
      return showLogin("Your session ended; log in again.");
    mount(
      main,
      h(
        "div",
        { class: "notice bad", id: "page-error" },
        err instanceof ApiError ? err.message : String(err),
      ),
    );
    // The overview is a status page: after a 503 (NATS away) it keeps asking, and comes back by
    // itself when the hub can answer again.
    if (err instanceof ApiError && err.status === 503 && (path === "/" || path === "")) {
      refreshLater(path);
    }
  }
}

async function start() {
  const found = await state(CONSOLE_BASE);
  if (!found.operator) return showLogin();
  session = found;
  header();
  await route();
}

window.addEventListener("hashchange", () => void route());
document.addEventListener("visibilitychange", () => {
  const onOverview = location.hash === "" || location.hash === "#/";
  if (document.visibilityState === "visible" && session && onOverview) void route();
});
void start();
