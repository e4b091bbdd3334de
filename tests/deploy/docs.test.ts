import { expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { IStatefulSet } from "kubernetes-models/apps/v1/StatefulSet";
import { named, OVERLAYS, REPO, readText, render } from "./k8s.ts";

const doc = readText(join(REPO, "docs/deploy.md"));

test("docs/deploy.md names the pinned NATS image, the minimum version and why", () => {
  const image = named<IStatefulSet>(render("base"), "StatefulSet", "nats").spec?.template.spec
    ?.containers[0]?.image;
  expect(image).toBeDefined();
  expect(doc).toContain(`\`${image}\``);
  expect(doc).toMatch(/nats-server 2\.11 or newer/);
  expect(doc).toContain("issue 4320");
  expect(doc).toContain("2.10.19");
});

test("docs/deploy.md gives the apply commands for paths that exist, and covers upgrades and R1/R3", () => {
  const applied = [...doc.matchAll(/kubectl apply -k (\S+)/g)].map((m) => m[1] ?? "");
  expect(applied.length).toBeGreaterThan(0);
  for (const path of applied) expect(existsSync(join(REPO, path, "kustomization.yaml"))).toBe(true);
  for (const overlay of OVERLAYS) expect(doc).toContain(`deploy/k8s/${overlay}`);
  for (const heading of ["## Upgrades", "## Sizing", "## R1 versus R3", "## Step by step"]) {
    expect(doc).toContain(heading);
  }
  expect(doc).toContain("lame duck");
});
