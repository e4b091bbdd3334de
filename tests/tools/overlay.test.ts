import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { DiagnosticSink } from "../../shared/tools/diagnostics.ts";
import { applyOverlay, compile, validateOverlay } from "../../shared/tools/index.ts";
import { REPO_ROOT } from "./helpers.ts";

// In CI the shared material is cloned beside the repo.
const CORPUS = join(REPO_ROOT, "../shared/corpus/overlay");
const read = (...p: string[]) => parse(readFileSync(join(CORPUS, ...p), "utf8"));

describe("Overlay corpus", () => {
  const sets = readdirSync(join(CORPUS, "compliant-sets")).sort();
  test("the corpus is present", () => {
    expect(sets.length).toBeGreaterThanOrEqual(5);
  });
  for (const set of sets) {
    test(`compliant set ${set}: output matches after parsing`, () => {
      const sink = new DiagnosticSink();
      const input = read("compliant-sets", set, "openapi.yaml");
      const before = JSON.stringify(input);
      const out = applyOverlay(
        input,
        read("compliant-sets", set, "overlay.yaml"),
        "overlay.yaml",
        sink,
      );
      expect(out).toEqual(read("compliant-sets", set, "output.yaml"));
      expect(sink.items).toEqual([]);
      expect(JSON.stringify(input)).toBe(before);
    });
  }
  for (const kind of ["pass", "fail"] as const) {
    const dir = join(CORPUS, "v1.0", kind);
    for (const file of readdirSync(dir).sort()) {
      test(`${kind}/${file} is ${kind === "pass" ? "accepted" : "refused"}`, () => {
        const problems = validateOverlay(parse(readFileSync(join(dir, file), "utf8")));
        if (kind === "pass") expect(problems).toEqual([]);
        else expect(problems.length).toBeGreaterThan(0);
      });
    }
  }
});

const api = {
  openapi: "3.1.0",
  info: { title: "t", version: "1" },
  paths: {
    "/items": { get: { operationId: "listItems", parameters: [{ name: "dummy", in: "query" }] } },
    "/items/{id}": { delete: { operationId: "deleteItem" }, get: { operationId: "getItem" } },
  },
};

describe("overlays in the compiler", () => {
  test("overlays apply in order; changed operations have source overlay and a diagnostic", () => {
    const first = {
      overlay: "1.0.0",
      info: { title: "risk", version: "1" },
      actions: [
        {
          target: "$.paths['/items/{id}'].delete",
          update: { "x-service-risk": "medium", "x-service-confirmRequired": false },
        },
        { target: "$.paths.*.get.parameters[?@.name == 'dummy']", remove: true },
      ],
    };
    const second = {
      overlay: "1.1.0",
      info: { title: "exclude", version: "1" },
      actions: [
        { target: "$.paths['/items/{id}'].get", update: { "x-service-exclude": true } },
        { target: "$.paths['/items'].get", copy: "$.paths['/items/{id}'].delete" },
      ],
    };
    const r = compile([
      { kind: "openapi", label: "api", doc: api },
      { kind: "overlay", label: "one", doc: first },
      { kind: "overlay", label: "two", doc: second },
    ]);
    // The copy also copied operationId, so both tools collide and get hash suffixes.
    expect(r.tools.map((t) => [t.path, t.source, t.risk, t.confirmRequired]).sort()).toEqual([
      ["/items", "overlay", "medium", false],
      ["/items/{id}", "overlay", "medium", false],
    ]);
    for (const t of r.tools) expect(t.name).toMatch(/^deleteItem_[0-9a-f]{8}$/);
    expect(r.diagnostics.filter((d) => d.code === "name.collision")).toHaveLength(2);
    expect(r.tools[1]?.inputSchema.properties).toEqual({});
    expect(r.diagnostics.filter((d) => d.code === "operation.overlay_changed")).toHaveLength(2);
    expect(r.diagnostics.filter((d) => d.code === "operation.excluded")).toHaveLength(1);
  });

  test("invalid overlays are refused whole; bad JSONPath and empty matches are reported", () => {
    const r = compile([
      { kind: "openapi", label: "api", doc: api },
      {
        kind: "overlay",
        label: "bad",
        doc: { overlay: "1.0.0", info: { title: "x" }, actions: [] },
      },
      {
        kind: "overlay",
        label: "paths",
        doc: {
          overlay: "1.0.0",
          info: { title: "x", version: "1" },
          actions: [
            { target: "$.paths[?(@.x", update: {} },
            { target: "$.nothing", update: {} },
            { target: "$.openapi", update: {} },
          ],
        },
      },
    ]);
    const codes = r.diagnostics.map((d) => d.code);
    expect(codes).toContain("overlay.invalid");
    expect(codes).toContain("overlay.target_invalid");
    expect(codes).toContain("overlay.target_no_match");
    expect(codes).toContain("overlay.target_primitive");
    expect(r.tools.every((t) => t.source === "openapi")).toBe(true);
  });

  test("update appends to arrays and merges objects recursively", () => {
    const sink = new DiagnosticSink();
    const out = applyOverlay(
      { a: { b: { c: 1 }, list: [1] } },
      {
        overlay: "1.0.0",
        info: { title: "x", version: "1" },
        actions: [
          { target: "$.a", update: { b: { d: 2 }, list: [2] } },
          { target: "$.a.list", update: 3 },
        ],
      },
      "o",
      sink,
    );
    expect(out).toEqual({ a: { b: { c: 1, d: 2 }, list: [1, 2, 3] } });
  });
});
