/**
 * The docs' example callback receivers listen by default on a port of their own: on the hub's
 * (8080), started beside `npm start`, one of the two fails with EADDRINUSE.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { parseConfig } from "../../shared/config/index.ts";

test("example receivers in docs/sdk.md default to a port other than the hub's", async () => {
  const hubPort = parseConfig("", {}).server.port;
  const doc = await Bun.file(join(import.meta.dir, "../../docs/sdk.md")).text();
  const defaults = [
    ...doc.matchAll(/process\.env\.PORT \?\? (\d+)/g),
    ...doc.matchAll(/os\.environ\.get\("PORT", "(\d+)"\)/g),
  ].map((m) => Number(m[1]));
  expect(defaults.length).toBe(2); // the TypeScript and the Python receiver
  for (const port of defaults) expect(port).not.toBe(hubPort);
});
