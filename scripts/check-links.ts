/**
 * Checks that every relative link and anchor in the reference docs resolves: README.md, every
 * Markdown file under docs/ and every README under sdk/. A link to another Markdown file must name
 * a file that exists and, with a fragment, a heading (or an explicit `<a id>`) in it; a fragment
 * alone must name a heading of the same file. Anchors follow GitHub's slugs, so a link that works
 * here works on GitHub. Run by `npm run lint`; exits 1 and names each broken link.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";

/** One link found in a Markdown file: its target as written and the 1-based line it is on. */
export interface MarkdownLink {
  target: string;
  line: number;
}

/** A link that does not resolve, and why. */
export interface BrokenLink {
  file: string;
  line: number;
  target: string;
  reason: string;
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const INLINE_LINK = /!?\[((?:[^[\]]|\[[^[\]]*\])*)\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+"[^"]*")?\s*\)/g;
const REFERENCE_DEFINITION = /^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/;
const HTML_ANCHOR = /<a\s+(?:[^>]*\s)?(?:id|name)="([^"]+)"/g;
const SCHEME = /^[a-z][a-z0-9+.-]*:/i;

/** A line outside fenced code: as written, with its code spans blanked, and its 1-based number. */
export interface ProseLine {
  text: string;
  /** The line with each inline code span's content turned into `x`s, so a link inside is not taken for real. */
  prose: string;
  line: number;
}

/** The lines of a Markdown text outside fenced code blocks. */
export function proseLines(markdown: string): ProseLine[] {
  const out: ProseLine[] = [];
  let fence: string | null = null;
  markdown.split("\n").forEach((raw, index) => {
    const opener = FENCE.exec(raw)?.[1];
    if (fence !== null) {
      if (opener !== undefined && opener[0] === fence[0] && opener.length >= fence.length)
        fence = null;
      return;
    }
    if (opener !== undefined) {
      fence = opener;
      return;
    }
    const prose = raw.replace(
      /(`+)(.+?)\1/g,
      (_m, ticks: string, body: string) => `${ticks}${"x".repeat(body.length)}${ticks}`,
    );
    out.push({ text: raw, prose, line: index + 1 });
  });
  return out;
}

/** A heading's text as GitHub renders it: links become their text, code and emphasis marks go. */
function renderedText(heading: string): string {
  return heading
    .replace(/!?\[((?:[^[\]]|\[[^[\]]*\])*)\]\([^)]*\)/g, "$1")
    .replace(/<[^>]+>/g, "")
    .replace(/[`*]/g, "");
}

/**
 * GitHub's anchor for a heading (github-slugger): lower case, every character that is not a
 * letter, mark, digit, `_`, `-` or space dropped, each space turned into `-`.
 */
export function slugify(heading: string): string {
  return renderedText(heading)
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
    .replace(/ /g, "-");
}

/** Every anchor a Markdown file defines: its headings' slugs (repeats get -1, -2, …) and `<a id>`s. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { text, prose } of proseLines(markdown)) {
    const heading = HEADING.exec(text)?.[2];
    if (heading !== undefined) {
      const base = slugify(heading);
      let slug = base;
      let count = seen.get(base) ?? 0;
      while (anchors.has(slug)) {
        count += 1;
        slug = `${base}-${count}`;
      }
      seen.set(base, count);
      anchors.add(slug);
    }
    for (const match of prose.matchAll(HTML_ANCHOR)) anchors.add(match[1] ?? "");
  }
  return anchors;
}

function unwrap(target: string): string {
  return target.startsWith("<") && target.endsWith(">") ? target.slice(1, -1) : target;
}

/** Every inline link, image and reference definition in a Markdown text, outside code. */
export function linksOf(markdown: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const { prose, line } of proseLines(markdown)) {
    const definition = REFERENCE_DEFINITION.exec(prose)?.[1];
    if (definition !== undefined) {
      links.push({ target: unwrap(definition), line });
      continue;
    }
    for (const match of prose.matchAll(INLINE_LINK))
      links.push({ target: unwrap(match[2] ?? ""), line });
  }
  return links;
}

/** What checkLinks needs to know about the tree: file contents by path, and whether a path exists. */
export interface LinkTree {
  /** Markdown files to check, by path relative to the repository root. */
  files: ReadonlyMap<string, string>;
  exists(path: string): boolean;
  /** The text of a Markdown file a link points at (undefined when it is not readable). */
  read(path: string): string | undefined;
}

function brokenReason(tree: LinkTree, file: string, target: string): string | null {
  if (SCHEME.test(target) || target.startsWith("//")) return null;
  const hashAt = target.indexOf("#");
  const pathPart = hashAt === -1 ? target : target.slice(0, hashAt);
  const fragment = hashAt === -1 ? "" : decodeURIComponent(target.slice(hashAt + 1));
  const path =
    pathPart === "" ? file : normalize(join(dirname(file), decodeURIComponent(pathPart)));
  if (path.startsWith("..")) return "points outside the repository";
  if (pathPart !== "" && !tree.exists(path)) return `no file ${path}`;
  if (fragment === "" || !path.endsWith(".md")) return null;
  const text = tree.files.get(path) ?? tree.read(path);
  if (text === undefined) return `cannot read ${path}`;
  return anchorsOf(text).has(fragment) ? null : `no heading #${fragment} in ${path}`;
}

/** Every link in the tree's files that does not resolve. */
export function checkLinks(tree: LinkTree): BrokenLink[] {
  const broken: BrokenLink[] = [];
  for (const [file, text] of tree.files) {
    for (const { target, line } of linksOf(text)) {
      const reason = brokenReason(tree, file, target);
      if (reason !== null) broken.push({ file, line, target, reason });
    }
  }
  return broken;
}

function markdownUnder(root: string, dir: string, only?: RegExp): string[] {
  if (!existsSync(join(root, dir))) return [];
  return readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
    .filter((name) => !name.split("/").some((part) => part === "node_modules" || part === "dist"))
    .filter((name) => name.endsWith(".md") && (only === undefined || only.test(name)))
    .map((name) => join(dir, name));
}

function treeAt(root: string): LinkTree {
  const names = [
    "README.md",
    ...markdownUnder(root, "docs"),
    ...markdownUnder(root, "sdk", /(^|\/)README\.md$/),
  ];
  const files = new Map(names.map((name) => [name, readFileSync(join(root, name), "utf8")]));
  return {
    files,
    exists: (path) => existsSync(join(root, path)),
    read: (path) =>
      existsSync(join(root, path)) && statSync(join(root, path)).isFile()
        ? readFileSync(join(root, path), "utf8")
        : undefined,
  };
}

if (import.meta.main) {
  const root = join(import.meta.dir, "..");
  const tree = treeAt(root);
  const broken = checkLinks(tree);
  for (const b of broken)
    console.error(
      `${relative(process.cwd(), join(root, b.file))}:${b.line}: ${b.target} (${b.reason})`,
    );
  if (broken.length > 0) {
    console.error(`${broken.length} broken link(s) in ${tree.files.size} Markdown files`);
    process.exit(1);
  }
  console.log(`links: ${tree.files.size} Markdown files, every relative link and anchor resolves`);
}
