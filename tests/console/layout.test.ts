/**
 * The console's layout in a real browser (issue 30, item 16): on a phone (390×844) every page
 * fits the screen (no element reaches past its right edge, nothing to scroll sideways), lists
 * and the timeline are stacked rows whose data is readable, the header's links do not break; on
 * a desktop the status filter shows all six statuses, the charts fill their panels with readable
 * labels, a callback rate without callbacks says so, redacted output reads like redacted input,
 * metadata has its own section, and a refused login says so in an operator's words and keeps the
 * token typed. Screenshots go to tests/console/screenshots/ (git-ignored).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import {
  CLIENT_TOKENS,
  OPERATOR_TOKENS,
  type OperatorHub,
  startOperatorHub,
} from "../admin/operator-hub.ts";
import { waitFor } from "../helpers/wait.ts";

const CHROMIUM = "/usr/bin/chromium";
const SHOTS = join(import.meta.dir, "screenshots");
const PHONE = { width: 390, height: 844 };
const DESKTOP = { width: 1280, height: 860 };
const HIDDEN = "(hidden: needs read_payloads)";

let op: OperatorHub;
let browser: Browser;
const ids: Record<string, string> = {};
const problems: string[] = [];

async function submit(body: Record<string, unknown>): Promise<string> {
  const res = await op.hub.run(body, CLIENT_TOKENS.acme);
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
  op = await startOperatorHub();
  ids.done = await submit({
    request_id: "layout-done",
    route: "demo.echo",
    input: `{"order":"A-1042","lines":[${'{"sku":"widget-blue-large","qty":3},'.repeat(6)}{"sku":"x","qty":1}]}`,
    metadata: { principal: { id: "user-7", tenant: "tenant-layout" }, source: "checkout" },
  });
  ids.rejected = await submit({ request_id: "layout-rejected", route: "demo.off", input: "x" });
  for (let i = 0; i < 4; i++) {
    await submit({ request_id: `layout-${i}`, route: "demo.echo", input: `job ${i}` });
  }
  await waitFor("the jobs in the index", async () => {
    const res = await op.admin("/jobs?client=acme", OPERATOR_TOKENS.alice);
    const jobs = ((await res.json()) as { jobs: { status: string }[] }).jobs;
    return jobs.length === 6 && jobs.every((j) => j.status === "done" || j.status === "rejected");
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
});

async function open(viewport: { width: number; height: number }, token?: string): Promise<Page> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  page.on("pageerror", (err) => problems.push(`page error: ${err.message}`));
  page.on("console", (msg) => {
    if (msg.type() === "error" && !msg.text().includes("401")) {
      problems.push(`console error: ${msg.text()}`);
    }
  });
  await page.goto(`${op.hub.baseUrl}/console/`);
  await page.waitForSelector("#login");
  if (token) {
    await page.fill("#token", token);
    await page.click("#login button[type=submit]");
    await page.waitForSelector("#operator");
  }
  return page;
}

/** Elements whose box reaches past the viewport's right edge (or starts left of it). */
async function overflowing(page: Page): Promise<string[]> {
  const viewport = await page.$eval("html", (html) => html.clientWidth);
  return page.$$eval(
    "body *",
    (elements, width) => {
      const out: string[] = [];
      for (const el of elements) {
        const box = el.getBoundingClientRect();
        if (box.width === 0 && box.height === 0) continue;
        if (box.right > width + 0.5 || box.left < -0.5) {
          const name = `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}${
            el.getAttribute("class") ? `.${el.getAttribute("class")}` : ""
          }`;
          out.push(`${name} [${Math.round(box.left)}, ${Math.round(box.right)}]`);
        }
      }
      return out;
    },
    viewport,
  );
}

/** The page fits: nothing reaches past the right edge, and the document does not scroll sideways. */
async function expectFits(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `phone-${name}.png`), fullPage: true });
  expect({ name, overflowing: await overflowing(page) }).toEqual({ name, overflowing: [] });
  const scroll = await page.$eval("html", (html) => html.scrollWidth - html.clientWidth);
  expect({ name, scroll }).toEqual({ name, scroll: 0 });
}

describe("on a phone (390×844)", () => {
  test("the login, the overview, the jobs list and failed callbacks fit the screen", async () => {
    const page = await open(PHONE);
    await expectFits(page, "login");
    await page.fill("#token", OPERATOR_TOKENS.alice);
    await page.click("#login button[type=submit]");
    await page.waitForSelector("#card-accepted");
    await expectFits(page, "overview");
    // The header's links each stay on one line.
    const broken = await page.$$eval(".top a, .top button", (els) =>
      els.filter((el) => el.getClientRects().length > 1).map((el) => el.textContent),
    );
    expect(broken).toEqual([]);
    await page.goto(`${op.hub.baseUrl}/console/#/jobs`);
    await page.waitForSelector("#job-results tbody tr:nth-child(6)");
    await expectFits(page, "jobs");
    await page.goto(`${op.hub.baseUrl}/console/#/callbacks`);
    await page.waitForSelector("#job-results");
    await expectFits(page, "callbacks");
    await page.context().close();
  });

  test("a job's page fits, and the timeline's data is readable (stacked, full width)", async () => {
    const page = await open(PHONE, OPERATOR_TOKENS.alice);
    await page.goto(`${op.hub.baseUrl}/console/#/job/${ids.done}`);
    await page.waitForSelector("#timeline tbody tr");
    await expectFits(page, "job");
    const widths = await page.$$eval("#timeline tbody td.wrap", (tds) =>
      tds.map((td) => td.getBoundingClientRect().width),
    );
    expect(widths.length).toBeGreaterThan(0);
    for (const width of widths) expect(width).toBeGreaterThan(250);
    // The confirmation of an action fits too (answered "Cancel": nothing is retried).
    await page.goto(`${op.hub.baseUrl}/console/#/job/${ids.rejected}`);
    await page.waitForSelector(`#job-id >> text=${ids.rejected}`);
    await page.click("#retry-job");
    await page.waitForSelector("#confirm[open]");
    await expectFits(page, "confirm");
    await page.click("#confirm-no");
    await page.context().close();
  });
});

describe("on a desktop", () => {
  test("the status filter shows all six statuses without scrolling", async () => {
    const page = await open(DESKTOP, OPERATOR_TOKENS.alice);
    await page.goto(`${op.hub.baseUrl}/console/#/jobs`);
    await page.waitForSelector("#job-filters");
    const select = await page.$eval('#job-filters select[name="status"]', (el) => ({
      options: el.querySelectorAll("option").length,
      hidden: el.scrollHeight - el.clientHeight,
    }));
    expect(select).toEqual({ options: 6, hidden: 0 });
    await page.screenshot({ path: join(SHOTS, "desktop-jobs.png"), fullPage: true });
    await page.context().close();
  });

  test("the charts fill their panels, their labels are readable, no callbacks says so", async () => {
    const page = await open(DESKTOP, OPERATOR_TOKENS.alice);
    await page.waitForSelector("#card-callbacks");
    await page.screenshot({ path: join(SHOTS, "desktop-overview.png"), fullPage: true });
    expect(await page.textContent("#card-callbacks .value")).toBe("no callbacks");
    const charts = await page.$$eval(".chart-panel", (panels) =>
      panels.map((panel) => {
        const inner = panel.clientWidth - 24; // the panel's padding
        const chart = panel.querySelector(".chart-body");
        const labels = [...panel.querySelectorAll(".chart-label")].map(
          (l) => l.getBoundingClientRect().height,
        );
        return { share: (chart?.getBoundingClientRect().width ?? 0) / inner, labels };
      }),
    );
    expect(charts).toHaveLength(2);
    for (const chart of charts) {
      expect(chart.share).toBeGreaterThan(0.9);
      expect(chart.labels.length).toBeGreaterThan(1);
      for (const height of chart.labels) expect(height).toBeGreaterThanOrEqual(14);
    }
    await page.context().close();
  });

  test("a viewer's redacted output reads like the redacted input; metadata has its own section", async () => {
    const page = await open(DESKTOP, OPERATOR_TOKENS.victor);
    await page.goto(`${op.hub.baseUrl}/console/#/job/${ids.done}`);
    await page.waitForSelector("#timeline tbody tr");
    await page.screenshot({ path: join(SHOTS, "desktop-job-viewer.png"), fullPage: true });
    expect(await page.textContent("#job-output")).toBe(HIDDEN);
    const data = await page.$$eval("#timeline tbody td.wrap", (tds) =>
      tds.map((td) => td.textContent ?? ""),
    );
    expect(data[0]).toContain(`"input": "${HIDDEN}"`);
    expect(data[1]).toContain(`"output": "${HIDDEN}"`);
    const metadata = await page.textContent("#metadata");
    expect(metadata).toContain("tenant-layout");
    expect(metadata).toContain("checkout");
    // Metadata is shown once, in its section, not again in the timeline's run.requested.
    expect(data[0]).not.toContain("tenant-layout");
    await page.context().close();
  });

  test("a refused login says so in an operator's words and keeps the token typed", async () => {
    const page = await open(DESKTOP);
    await page.fill("#token", CLIENT_TOKENS.acme);
    await page.click("#login button[type=submit]");
    await page.waitForSelector("#login-error");
    await page.screenshot({ path: join(SHOTS, "desktop-login-refused.png") });
    const message = await page.textContent("#login-error");
    expect(message).toContain("This token was not accepted");
    expect(message).toContain("operator token");
    expect(await page.inputValue("#token")).toBe(CLIENT_TOKENS.acme);
    await page.context().close();
  });

  test("no page errors in any of it", () => {
    expect(problems).toEqual([]);
  });
});
