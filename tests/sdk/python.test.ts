/**
 * Runs the Python client's tests (tests/sdk/python, `python3 -m unittest`) so `npm test` and CI
 * run them. They start their own real hub through tests/sdk/hub-fixture.ts.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { REPO, runCommand } from "./packed.ts";

test("python3 -m unittest: the Python client against a real hub", async () => {
  if (!Bun.which("python3")) {
    throw new Error("python3 is missing: install it (Debian: apt-get install python3)");
  }
  const dir = join(REPO, "tests/sdk/python");
  const ran = await runCommand(
    ["python3", "-m", "unittest", "discover", "-v", "-s", dir, "-t", dir],
    {
      cwd: REPO,
      env: { PYTHONDONTWRITEBYTECODE: "1", PYTHONUNBUFFERED: "1" },
      timeoutMs: 180_000,
    },
  );
  if (ran.code !== 0) throw new Error(ran.output);
  // unittest ends with "Ran N tests" and "OK"; a run that found no test would still say OK.
  const count = Number(/^Ran (\d+) tests? in/m.exec(ran.output)?.[1] ?? 0);
  expect(count).toBeGreaterThanOrEqual(30);
  expect(ran.output).toMatch(/^OK$/m);
}, 200_000);
