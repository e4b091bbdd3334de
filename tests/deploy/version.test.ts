import { expect, test } from "bun:test";
import { join } from "node:path";
import type { IDeployment } from "kubernetes-models/apps/v1/Deployment";
import { byKind, OVERLAYS, REPO, readText, render } from "./k8s.ts";

// One version story: the hub's package, both SDKs, the image every manifest runs and the docs that
// name them carry one version, and the upgrade notes name the one before it.

const version = (JSON.parse(readText(join(REPO, "package.json"))) as { version: string }).version;
const [major, minor] = version.split(".").map(Number);
const previous = `${major}.${(minor ?? 0) - 1}`;

test("the hub, the TypeScript SDK and the Python SDK carry one version", () => {
  expect(version).toMatch(/^\d+\.\d+\.\d+$/);
  const lock = JSON.parse(readText(join(REPO, "package-lock.json"))) as {
    version: string;
    packages: Record<string, { version?: string }>;
  };
  expect(lock.version).toBe(version);
  expect(lock.packages[""]?.version).toBe(version);
  expect(
    (JSON.parse(readText(join(REPO, "sdk/package.json"))) as { version: string }).version,
  ).toBe(version);
  expect(readText(join(REPO, "sdk/python/pyproject.toml"))).toContain(`\nversion = "${version}"\n`);
  expect(readText(join(REPO, "sdk/python/src/switchyard_sdk/__init__.py"))).toContain(
    `__version__ = "${version}"`,
  );
});

test("every overlay runs the Switchyard image tagged with that version", () => {
  for (const overlay of OVERLAYS) {
    const images = byKind<IDeployment>(render(overlay), "Deployment")
      .flatMap((d) => d.spec?.template.spec?.containers ?? [])
      .map((c) => c.image ?? "")
      .filter((image) => image.includes("/switchyard:"));
    expect(images.length).toBeGreaterThan(0);
    for (const image of images) expect(image).toBe(`registry.example.com/switchyard:${version}`);
  }
});

test("the docs name that version wherever they name one, and upgrade from the one before", () => {
  const named = [
    ...readText(join(REPO, "deploy/Dockerfile")).matchAll(/switchyard:(\d+\.\d+\.\d+)/g),
    ...readText(join(REPO, "docs/deploy.md")).matchAll(/switchyard:(\d+\.\d+\.\d+)/g),
    ...readText(join(REPO, "docs/sdk.md")).matchAll(/switchyard-sdk-(\d+\.\d+\.\d+)\.tgz/g),
    ...readText(join(REPO, "README.md")).matchAll(/Version: (\d+\.\d+\.\d+)/g),
  ].map((m) => m[1]);
  expect(named.length).toBeGreaterThanOrEqual(5);
  for (const v of named) expect(v).toBe(version);
  expect(readText(join(REPO, "docs/operations.md"))).toContain(`## Upgrading from ${previous}`);
});
