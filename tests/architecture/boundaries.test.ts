import { describe, expect, test } from "bun:test";
import {
  checkBoundaries,
  type ImportEdge,
  importSpecifiers,
  REPOSITORY_ROOT,
  readImportGraph,
} from "./boundaries.ts";

describe("module boundaries", () => {
  test("services/ and shared/ import across modules only through index.ts, and only downwards", async () => {
    const graph = await readImportGraph(REPOSITORY_ROOT);
    // The graph is the real tree: hundreds of imports, among them the runtime's own composition.
    expect(graph.length).toBeGreaterThan(500);
    expect(graph).toContainEqual({
      from: "services/runtime/run.ts",
      to: "services/ingress/index.ts",
    });
    expect(checkBoundaries(graph)).toEqual([]);
  });

  test("the checker refuses each kind of crossing in a made-up graph", () => {
    const graph: ImportEdge[] = [
      // Allowed: inside a module, through an index, a composer through an index, shared downwards.
      { from: "services/ingress/app.ts", to: "services/ingress/auth.ts" },
      { from: "services/ingress/app.ts", to: "shared/bus/index.ts" },
      { from: "services/runtime/run.ts", to: "services/ingress/index.ts" },
      { from: "services/cli/main.ts", to: "services/runtime/index.ts" },
      { from: "shared/jobs/reader.ts", to: "shared/bus/index.ts" },
      // Refused.
      { from: "shared/jobs/reader.ts", to: "services/projector/index.ts" },
      { from: "services/ingress/index.ts", to: "services/admin-api/index.ts" },
      { from: "services/cli/run-commands.ts", to: "services/runtime/limits.ts" },
      { from: "shared/jobs/reader.ts", to: "shared/bus/read.ts" },
      { from: "services/executor/kinds/http/queue.ts", to: "shared/nats/headers.ts" },
    ];
    expect(checkBoundaries(graph)).toEqual([
      {
        from: "shared/jobs/reader.ts",
        to: "services/projector/index.ts",
        rule: "shared-imports-service",
      },
      {
        from: "services/ingress/index.ts",
        to: "services/admin-api/index.ts",
        rule: "service-imports-service",
      },
      {
        from: "services/cli/run-commands.ts",
        to: "services/runtime/limits.ts",
        rule: "past-index",
      },
      { from: "shared/jobs/reader.ts", to: "shared/bus/read.ts", rule: "past-index" },
      {
        from: "services/executor/kinds/http/queue.ts",
        to: "shared/nats/headers.ts",
        rule: "past-index",
      },
    ]);
  });

  test("imports are read in every form: type-only, re-exports, multi-line, dynamic", () => {
    const source = [
      'import { a } from "../a/index.ts";',
      'import type { B } from "./b.ts";',
      "import {",
      "  c,",
      "  type D,",
      '} from "../c/index.ts";',
      'export * from "./e.ts";',
      'export { f } from "./f.ts";',
      'import "./side-effect.ts";',
      'const g = await import("../g/index.ts");',
      'import { Elysia } from "elysia";',
    ].join("\n");
    expect(importSpecifiers(source)).toEqual([
      "../a/index.ts",
      "./b.ts",
      "../c/index.ts",
      "./e.ts",
      "./f.ts",
      "./side-effect.ts",
      "../g/index.ts",
    ]);
  });
});
