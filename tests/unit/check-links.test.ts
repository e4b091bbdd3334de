import { describe, expect, test } from "bun:test";
import {
  anchorsOf,
  checkLinks,
  type LinkTree,
  linksOf,
  slugify,
} from "../../scripts/check-links.ts";

// The link checker behind `npm run lint`: GitHub's anchor slugs, what counts as a link, and which
// links resolve. Pure logic; the tree is a map, not the file system.

describe("slugify (GitHub's anchors)", () => {
  test.each([
    ["Job statuses, `evolve` and `decide`", "job-statuses-evolve-and-decide"],
    ["Traces (OpenTelemetry)", "traces-opentelemetry"],
    ["Upgrading from 0.1", "upgrading-from-01"],
    ["What limits it — issue 9", "what-limits-it--issue-9"],
    ["snake_case and kebab-case", "snake_case-and-kebab-case"],
    ["See [the API](api.md) **now**", "see-the-api-now"],
    ["Café à la carte", "café-à-la-carte"],
    ["p99 submit → callback < 20 ms", "p99-submit--callback--20-ms"],
  ])("%s → %s", (heading, slug) => {
    expect(slugify(heading)).toBe(slug);
  });
});

describe("anchorsOf", () => {
  test("repeated headings get -1, -2 in order, as on GitHub", () => {
    const anchors = anchorsOf("# Setup\n## Setup\n### Setup\n## Setup-1\n");
    expect([...anchors]).toEqual(["setup", "setup-1", "setup-2", "setup-1-1"]);
  });

  test("headings inside fenced code are not anchors; explicit <a id> and closing #s are", () => {
    const text =
      '```sh\n# not a heading\n```\n## Real ##\n<a id="custom"></a>\n~~~\n# nor this\n~~~\n';
    expect([...anchorsOf(text)].sort()).toEqual(["custom", "real"]);
  });

  test("a longer fence is closed only by a fence as long", () => {
    expect([...anchorsOf("````md\n```\n# inside\n````\n# outside\n")]).toEqual(["outside"]);
  });
});

describe("linksOf", () => {
  test("inline links, images, titles, angle brackets and reference definitions, with line numbers", () => {
    const text = [
      'See [a](a.md#x) and ![img](images/p.png "title").',
      "[`code` text](<b c.md>)",
      "[ref]: ../c.md",
      "Plain [brackets] and (parens) are not links; [nested [x]](d.md).",
    ].join("\n");
    expect(linksOf(text)).toEqual([
      { target: "a.md#x", line: 1 },
      { target: "images/p.png", line: 1 },
      { target: "b c.md", line: 2 },
      { target: "../c.md", line: 3 },
      { target: "d.md", line: 4 },
    ]);
  });

  test("links in code spans and fenced blocks are ignored", () => {
    expect(linksOf("`[x](gone.md)`\n```\n[y](gone.md)\n```\n")).toEqual([]);
  });
});

function tree(files: Record<string, string>, others: string[] = []): LinkTree {
  const map = new Map(Object.entries(files));
  return {
    files: map,
    exists: (path) => map.has(path) || others.includes(path),
    read: (path) => map.get(path),
  };
}

describe("checkLinks", () => {
  test("resolves relative paths, same-file anchors and other files' anchors", () => {
    const broken = checkLinks(
      tree(
        {
          "README.md":
            "[ok](docs/a.md#two-words) [dir](docs) [img](docs/images/x.png) [web](https://x.test/#nope)",
          "docs/a.md":
            "# Two words\n[self](#two-words) [up](../README.md) [mail](mailto:a@b.test)\n",
        },
        ["docs", "docs/images/x.png"],
      ),
    );
    expect(broken).toEqual([]);
  });

  test("names each missing file, missing anchor and link out of the repository", () => {
    const broken = checkLinks(
      tree({
        "README.md": "[a](docs/missing.md)\n[b](docs/a.md#nope)\n[c](../shared/spec/x.md)\n",
        "docs/a.md": "# A\n[d](#a) [e](#b)\n",
      }),
    );
    expect(broken).toEqual([
      { file: "README.md", line: 1, target: "docs/missing.md", reason: "no file docs/missing.md" },
      {
        file: "README.md",
        line: 2,
        target: "docs/a.md#nope",
        reason: "no heading #nope in docs/a.md",
      },
      {
        file: "README.md",
        line: 3,
        target: "../shared/spec/x.md",
        reason: "points outside the repository",
      },
      { file: "docs/a.md", line: 2, target: "#b", reason: "no heading #b in docs/a.md" },
    ]);
  });
});
