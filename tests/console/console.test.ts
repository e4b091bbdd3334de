/**
 * The web console in a real browser (issue 16, section 4): Debian's chromium driven by
 * playwright-core. The tests log in, search, page through results, open a job, cancel one, retry
 * one, redeliver failed callbacks and log out, also with every request outside 127.0.0.1 aborted,
 * and fail on any console error or failed request. Screenshots go to
 * tests/console/screenshots/ (git-ignored; docs/images holds the ones the docs show).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import {
  CLIENT_TOKENS,
  OPERATOR_TOKENS,
  type OperatorHub,
  startOperatorHub,
} from "../admin/operator-hub.ts";
import { waitFor } from "../helpers/wait.ts";

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = join(import.meta.dir, "screenshots");

let op: OperatorHub;
let browser: Browser;
let receiver: ReturnType<typeof Bun.serve>;
const problems: string[] = [];
const ids: Record<string, string> = {};

async function submit(
  client: keyof typeof CLIENT_TOKENS,
  body: Record<string, unknown>,
): Promise<string> {
  const res = await op.hub.run({ input: "console test input", ...body }, CLIENT_TOKENS[client]);
  expect(res.status).toBe(202);
  return ((await res.json()) as { job_id: string }).job_id;
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)`,
    );
  }
  mkdirSync(SHOTS, { recursive: true });
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () => new Response(null, { status: 410 }),
  });
  op = await startOperatorHub();
  const gone = `http://127.0.0.1:${receiver.port}/gone`;
  for (let i = 0; i < 6; i++) {
    await submit(i % 2 ? "globex" : "acme", {
      request_id: `ui-${i}`,
      route: "demo.echo",
      metadata: { principal: { id: "u", tenant: "tenant-ui" } },
    });
  }
  ids.slow = await submit("acme", { request_id: "ui-slow", route: "demo.slow" });
  ids.rejected = await submit("acme", { request_id: "ui-rejected", route: "demo.off" });
  ids.cb1 = await submit("globex", {
    request_id: "ui-cb-1",
    route: "demo.echo",
    callback_url: gone,
  });
  ids.cb2 = await submit("globex", {
    request_id: "ui-cb-2",
    route: "demo.echo",
    callback_url: gone,
  });
  await waitFor("the failed callbacks in the index", async () => {
    const res = await op.admin("/callbacks/failed?client=globex", OPERATOR_TOKENS.alice);
    return ((await res.json()) as { jobs: unknown[] }).jobs.length === 2;
  });
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await op?.stop();
  receiver?.stop(true);
});

/**
 * A fresh browser context that records console errors, failed requests and error answers. With
 * `offline`, every request to anywhere but the hub on 127.0.0.1 is aborted and listed there.
 */
async function openConsole(offline?: string[]): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
  if (offline) {
    await context.route(
      (url) => url.hostname !== "127.0.0.1",
      (route) => {
        offline.push(route.request().url());
        return route.abort("internetdisconnected");
      },
    );
  }
  const page = await context.newPage();
  page.on("console", (msg) => {
    if (msg.type() === "error") problems.push(`console error: ${msg.text()}`);
  });
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("requestfailed", (req) =>
    problems.push(`request failed: ${req.url()} ${req.failure()?.errorText}`),
  );
  page.on("response", (res) => {
    if (res.status() >= 400) problems.push(`answer ${res.status()}: ${res.url()}`);
  });
  await page.goto(`${op.hub.baseUrl}/console`);
  return { context, page };
}

async function logIn(page: Page, token: string): Promise<void> {
  await page.fill("#token", token);
  await page.click("#login button[type=submit]");
  await page.waitForSelector("#operator");
}

async function confirmDialog(page: Page): Promise<void> {
  await page.waitForSelector("#confirm[open]");
  await page.click("#confirm-yes");
}

describe("the console", () => {
  test("logs in, shows the overview, searches, opens a job", async () => {
    const { context, page } = await openConsole();
    await page.waitForSelector("#login");
    await page.screenshot({ path: join(SHOTS, "login.png") });
    await logIn(page, OPERATOR_TOKENS.alice);
    expect(await page.textContent("#operator")).toContain("alice (operator, payloads)");
    await page.waitForSelector("#card-accepted");
    await page.waitForSelector("svg.chart rect", { state: "attached" });
    await page.screenshot({ path: join(SHOTS, "overview.png"), fullPage: true });
    // The session is an HttpOnly, SameSite=Strict cookie, sent to the console and its API only.
    const cookies = await context.cookies();
    for (const cookie of cookies) {
      expect(cookie).toMatchObject({ name: "sy_console", httpOnly: true, sameSite: "Strict" });
    }
    expect(cookies.map((c) => c.path).sort()).toEqual(["/admin/v1", "/console"]);

    await page.click('a[data-nav="jobs"]');
    await page.waitForSelector("#job-filters");
    await page.fill('#job-filters input[name="tenant"]', "tenant-ui");
    await page.selectOption('#job-filters select[name="status"]', ["done"]);
    await page.click("#job-filters button[type=submit]");
    await page.waitForURL(/tenant=tenant-ui/);
    // The unfiltered list stays until the search's answer replaces it: wait for the answer's
    // count, not for a sixth row the old list has too. (No waitForFunction: the console's CSP
    // refuses the eval it needs, as it should.)
    await page.waitForSelector(".pager span >> text=/^6 shown/");
    expect(await page.locator("#job-results tbody tr").count()).toBe(6);
    await page.screenshot({ path: join(SHOTS, "search.png"), fullPage: true });
    await page.click("#job-results tbody tr:first-child a");
    await page.waitForSelector("#timeline table");
    const types = await page.$$eval("#timeline tbody tr td:nth-child(3)", (tds) =>
      tds.map((td) => td.textContent),
    );
    expect(types).toEqual(["run.requested", "job.done"]);
    // alice may read payloads: the input is in the timeline.
    expect(await page.textContent("#timeline")).toContain("console test input");
    await page.screenshot({ path: join(SHOTS, "job.png"), fullPage: true });
    await context.close();
  });

  test("cancels a job and retries one, each after a confirmation", async () => {
    const { context, page } = await openConsole();
    await logIn(page, OPERATOR_TOKENS.olga);
    await page.goto(`${op.hub.baseUrl}/console/#/job/${ids.slow}`);
    await page.click("#cancel-job");
    await confirmDialog(page);
    await page.waitForSelector("#job-error");
    expect(await page.textContent("#job-error")).toContain("cancelled: cancelled by operator olga");
    expect(await page.$("#cancel-job")).toBeNull();

    // A hash change: the cancelled job's page (which has a retry button too) stays until the
    // rejected job's page replaces it, so wait for that before clicking.
    await page.goto(`${op.hub.baseUrl}/console/#/job/${ids.rejected}`);
    await page.waitForSelector(`#job-id >> text=${ids.rejected}`);
    await page.click("#retry-job");
    await confirmDialog(page);
    await page.waitForSelector("#retry-of");
    expect(await page.textContent("#retry-of")).toBe(ids.rejected ?? "");
    const newJob = await page.textContent("#job-id");
    expect(newJob).not.toBe(ids.rejected);
    await page.screenshot({ path: join(SHOTS, "retried-job.png"), fullPage: true });
    await page.click("#retry-of a");
    await page.waitForSelector("#retried-as");
    expect(await page.textContent("#retried-as")).toBe(newJob);
    await context.close();
  });

  test("redelivers failed callbacks: one from its job, then all matching after the dry-run count", async () => {
    const { context, page } = await openConsole();
    await logIn(page, OPERATOR_TOKENS.olga);
    await page.goto(`${op.hub.baseUrl}/console/#/job/${ids.cb1}`);
    await page.waitForSelector("#callback-attempts table");
    await page.click("#redeliver-callback");
    await confirmDialog(page);
    await page.waitForSelector("#action-result .notice");
    expect(await page.textContent("#action-result")).toContain("Redelivery requested");
    // Wait until that redelivery has failed again, so both are failed for the bulk action.
    await waitFor("the redelivery to fail again", async () => {
      const res = await op.admin("/callbacks/failed?client=globex", OPERATOR_TOKENS.alice);
      return ((await res.json()) as { jobs: unknown[] }).jobs.length === 2;
    });
    await page.goto(`${op.hub.baseUrl}/console/#/callbacks?client=globex`);
    await page.waitForSelector("#job-results tbody tr:nth-child(2)");
    expect(await page.locator("#job-results tbody tr").count()).toBe(2);
    await page.screenshot({ path: join(SHOTS, "failed-callbacks.png"), fullPage: true });
    await page.click("#bulk-redeliver");
    await page.waitForSelector("#confirm[open]");
    expect(await page.textContent("#confirm-text")).toContain("Redeliver 2 failed callback(s)");
    await page.screenshot({ path: join(SHOTS, "bulk-confirm.png") });
    await page.click("#confirm-yes");
    await page.waitForSelector("#bulk-result .notice");
    expect(await page.textContent("#bulk-result")).toContain("2 redelivery request(s) made");
    await context.close();
  });

  test("a viewer sees no actions, and no payloads", async () => {
    const { context, page } = await openConsole();
    await logIn(page, OPERATOR_TOKENS.victor);
    await page.goto(`${op.hub.baseUrl}/console/#/job/${ids.cb2}`);
    await page.waitForSelector("#timeline table");
    expect(await page.$("#cancel-job")).toBeNull();
    expect(await page.$("#retry-job")).toBeNull();
    expect(await page.$("#redeliver-callback")).toBeNull();
    expect(await page.textContent("#timeline")).not.toContain("console test input");
    const [cookie] = await context.cookies();
    await page.click("#logout");
    await page.waitForSelector("#login");
    expect(await context.cookies()).toEqual([]);
    // The session is revoked on the hub, not only forgotten by the browser.
    const replayed = await fetch(`${op.hub.baseUrl}/admin/v1/session`, {
      headers: { cookie: `${cookie?.name}=${cookie?.value}` },
    });
    expect(replayed.status).toBe(401);
    await context.close();
  });

  test("pages through search results: next page, then back to the first", async () => {
    const { context, page } = await openConsole();
    await logIn(page, OPERATOR_TOKENS.victor);
    await page.goto(`${op.hub.baseUrl}/console/#/jobs?tenant=tenant-ui&limit=4`);
    const rows = async () => {
      await page.waitForSelector("#job-results tbody tr");
      return page.$$eval("#job-results tbody tr td:first-child", (tds) =>
        tds.map((td) => td.textContent ?? ""),
      );
    };
    const first = await rows();
    expect(first).toHaveLength(4);
    expect(await page.$("#first-page")).toBeNull();
    await page.click("#next-page");
    await page.waitForSelector("#first-page");
    const second = await rows();
    expect(second).toHaveLength(2);
    expect(await page.$("#next-page")).toBeNull();
    // Newest first, each job once: the six jobs of the tenant, as the API lists them.
    const api = await op.admin("/jobs?tenant=tenant-ui", OPERATOR_TOKENS.victor);
    const all = ((await api.json()) as { jobs: { job_id: string }[] }).jobs.map((j) => j.job_id);
    expect([...first, ...second]).toEqual(all);
    await page.click("#first-page");
    await page.waitForSelector("#next-page");
    expect(await rows()).toEqual(first);
    await context.close();
  });

  test("works with the network unplugged: nothing but the hub is ever asked for", async () => {
    const outside: string[] = [];
    const { context, page } = await openConsole(outside);
    const asked: string[] = [];
    page.on("request", (req) => asked.push(req.url()));
    await logIn(page, OPERATOR_TOKENS.alice);
    await page.waitForSelector("svg.chart rect", { state: "attached" });
    await page.goto(`${op.hub.baseUrl}/console/#/jobs?tenant=tenant-ui`);
    await page.waitForSelector("#job-results tbody tr:nth-child(6)");
    await page.click("#job-results tbody tr:first-child a");
    await page.waitForSelector("#timeline table");
    await page.goto(`${op.hub.baseUrl}/console/#/callbacks`);
    await page.waitForSelector("#job-results");
    expect(outside).toEqual([]);
    expect(asked.length).toBeGreaterThan(5);
    expect(asked.filter((url) => !url.startsWith(`${op.hub.baseUrl}/`))).toEqual([]);
    await context.close();
  });

  test("no console errors, failed requests or error answers in any of it", () => {
    expect(problems).toEqual([]);
  });
});

describe("console security", () => {
  test("strict headers; client tokens cannot log in; actions need the CSRF token", async () => {
    const page = await fetch(`${op.hub.baseUrl}/console/`);
    const csp = page.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    const html = await page.text();
    expect(html).not.toMatch(/https?:\/\//); // nothing from elsewhere
    const asClient = await fetch(`${op.hub.baseUrl}/console/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: CLIENT_TOKENS.acme }),
    });
    expect(asClient.status).toBe(401);
    const login = await fetch(`${op.hub.baseUrl}/console/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token: OPERATOR_TOKENS.olga }),
    });
    expect(login.status).toBe(204);
    const cookie = (login.headers.get("set-cookie") ?? "").split(";")[0] ?? "";
    expect(login.headers.get("set-cookie")).toMatch(/HttpOnly; SameSite=Strict/);
    const noCsrf = await fetch(`${op.hub.baseUrl}/admin/v1/jobs/${ids.slow}/cancel`, {
      method: "POST",
      headers: { cookie },
    });
    expect(noCsrf.status).toBe(403);
    expect(((await noCsrf.json()) as { code: string }).code).toBe("csrf_failed");
    const state = (await (
      await fetch(`${op.hub.baseUrl}/console/state`, { headers: { cookie } })
    ).json()) as {
      csrf_token: string;
    };
    const crossSite = await fetch(`${op.hub.baseUrl}/admin/v1/jobs/${ids.slow}/cancel`, {
      method: "POST",
      headers: { cookie, "x-csrf-token": state.csrf_token, "sec-fetch-site": "cross-site" },
    });
    expect(crossSite.status).toBe(403);
    const withCsrf = await fetch(`${op.hub.baseUrl}/admin/v1/jobs/${ids.slow}/cancel`, {
      method: "POST",
      headers: { cookie, "x-csrf-token": state.csrf_token },
    });
    expect(withCsrf.status).toBe(200); // cancelled before by olga in the browser
    const tampered = await fetch(`${op.hub.baseUrl}/admin/v1/session`, {
      headers: { cookie: `${cookie}x` },
    });
    expect(tampered.status).toBe(401);
    const clientOnConsoleApi = await fetch(`${op.hub.baseUrl}/console/state`, {
      headers: { authorization: `Bearer ${CLIENT_TOKENS.acme}` },
    });
    expect(await clientOnConsoleApi.json()).toEqual({ operator: null });
  });
});

describe("the console while NATS is away", () => {
  test("the overview says the event store is unreachable at its first refresh after NATS goes, then comes back by itself", async () => {
    const { context, page } = await openConsole();
    await logIn(page, OPERATOR_TOKENS.victor);
    await page.waitForSelector("#card-accepted");
    await op.hub.nats.kill("SIGKILL");
    await waitFor("the hub to see NATS gone", () => !op.hub.running.hub.connected());
    // The overview's refreshes asked for once the hub knew: the first one already says so.
    const answers: number[] = [];
    page.on("request", (req) => {
      if (!new URL(req.url()).pathname.endsWith("/overview")) return;
      void req.response().then((res) => answers.push(res?.status() ?? 0));
    });
    // Sessions are checked against sy_meta (a logout on any replica ends them), so with NATS away
    // the console cannot vouch for one: it says so, and the overview keeps asking every 5 s.
    const notice = page.locator("#page-error");
    await notice.waitFor({ timeout: 15_000 });
    expect(answers).toEqual([503]);
    expect(await notice.textContent()).toContain("the event store is unreachable");
    await page.screenshot({ path: join(SHOTS, "overview-nats-away.png"), fullPage: true });
    await op.hub.nats.restart();
    await page.waitForSelector("#card-accepted", { timeout: 30_000 });
    expect(await page.locator("#page-error").count()).toBe(0);
    await context.close();
  }, 60_000);
});
