/**
 * A CLI command's output reaches a slow reader whole: the process exits only after stdout and
 * stderr are flushed (services/cli/exit.ts). process.exit alone dropped what Bun still queued for
 * the pipe, so a compile read by a busy consumer lost its last lines (seen under load in
 * tests/tools/large-documents.test.ts: the summary line was missing; with the slow reader below,
 * about half of the 736 kB of diagnostics was lost on every run).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const REPO_ROOT = join(import.meta.dir, "../..");
const GITHUB = join(REPO_ROOT, "node_modules/@octokit/openapi/generated/api.github.com.json");
const dir = mkdtempSync(join(tmpdir(), "sy-exit-flush-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a compile's diagnostics read slowly from a pipe arrive whole, with the summary", async () => {
  const out = join(dir, "github.json");
  // -o: the tools go to a file, every diagnostic (info included) to stderr.
  const proc = Bun.spawn(
    [
      process.execPath,
      join(REPO_ROOT, "services/cli/main.ts"),
      "tools",
      "compile",
      GITHUB,
      "-o",
      out,
    ],
    { stdout: "ignore", stderr: "pipe" },
  );
  const reader = proc.stderr.getReader();
  const decoder = new TextDecoder();
  let stderr = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    stderr += decoder.decode(value, { stream: true });
    await Bun.sleep(2); // a busy consumer: the pipe stays full and Bun queues behind it
  }
  expect(await proc.exited).toBe(0);
  const summary = /^(\d+) tools \(.*, (\d+) diagnostics$/m.exec(stderr);
  expect(summary).not.toBeNull();
  expect(Number(summary?.[1])).toBeGreaterThan(1_000);
  const diagnosticLines = stderr.trimEnd().split("\n").length - 1;
  expect(diagnosticLines).toBe(Number(summary?.[2]));
}, 120_000);
