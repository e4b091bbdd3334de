import type { Report } from "./budget.ts";
import { defInfo, jsonBytes, stubFor } from "./defs-graph.ts";
import { isObject, type Json, type JsonObject } from "./schema-merge.ts";
import type { ToolDefinition } from "./schemas.ts";

const DEFS_PREFIX = "#/$defs/";
const RECURSION = "Recursive schema: the repeat is not inlined.";

class OverBudget extends Error {}

interface InlineState {
  defs: Record<string, Json>;
  budget: number;
  /** Bytes inlined so far (each inlined occurrence counts its definition's size). */
  spent: number;
  cut: Set<string>;
  /** Inlined forms of definitions that reach no recursion (the same wherever they appear). */
  memo: Map<string, Json>;
  recursive: Set<string>;
  reaches: Map<string, boolean>;
}

/** Names of definitions that can reach themselves: members of a cycle (Tarjan's SCC, iterative). */
function recursiveDefs(defs: Record<string, Json>): Set<string> {
  const out = new Set<string>();
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  let next = 0;
  const edges = (n: string) => defInfo(defs[n] as Json).refs.filter((r) => Object.hasOwn(defs, r));
  for (const start of Object.keys(defs)) {
    if (index.has(start)) continue;
    const work: { node: string; edges: string[]; i: number }[] = [];
    const open = (node: string) => {
      index.set(node, next);
      low.set(node, next++);
      stack.push(node);
      onStack.add(node);
      work.push({ node, edges: edges(node), i: 0 });
    };
    open(start);
    while (work.length > 0) {
      const top = work[work.length - 1] as { node: string; edges: string[]; i: number };
      if (top.i < top.edges.length) {
        const to = top.edges[top.i++] as string;
        if (to === top.node) out.add(to);
        if (!index.has(to)) open(to);
        else if (onStack.has(to))
          low.set(top.node, Math.min(low.get(top.node) as number, index.get(to) as number));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent)
        low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(top.node) as number));
      if (low.get(top.node) !== index.get(top.node)) continue;
      const members: string[] = [];
      let m: string;
      do {
        m = stack.pop() as string;
        onStack.delete(m);
        members.push(m);
      } while (m !== top.node);
      if (members.length > 1) for (const x of members) out.add(x);
    }
  }
  return out;
}

function inlineNode(node: Json, stack: string[], s: InlineState): Json {
  if (Array.isArray(node)) return node.map((n) => inlineNode(n, stack, s));
  if (!isObject(node)) return node;
  const ref = node.$ref;
  if (typeof ref === "string" && ref.startsWith(DEFS_PREFIX)) {
    const name = ref.slice(DEFS_PREFIX.length);
    const def = s.defs[name];
    const siblings = Object.entries(node).filter(([k]) => k !== "$ref");
    let target: Json;
    if (def === undefined) target = {};
    else if (stack.includes(name)) {
      s.cut.add(name);
      target = stubFor(def, RECURSION);
    } else target = inlineDef(name, def, stack, s);
    if (siblings.length === 0) return target;
    const out: JsonObject = isObject(target) ? { ...target } : {};
    for (const [k, v] of siblings) out[k] = inlineNode(v, stack, s);
    return out;
  }
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(node)) out[k] = inlineNode(v, stack, s);
  return out;
}

function inlineDef(name: string, def: Json, stack: string[], s: InlineState): Json {
  s.spent += defInfo(def).bytes;
  if (s.spent > s.budget) throw new OverBudget();
  const known = s.memo.get(name);
  if (known !== undefined) return known;
  const value = inlineNode(def, [...stack, name], s);
  // A definition that reaches no recursion inlines the same everywhere, so it is done once.
  if (!s.recursive.has(name) && !reachesRecursion(name, s)) s.memo.set(name, value);
  return value;
}

/** Whether a definition is recursive or refers (transitively) to one; memoised per tool. */
function reachesRecursion(name: string, s: InlineState): boolean {
  const known = s.reaches.get(name);
  if (known !== undefined) return known;
  // Not recursive, so this walk cannot come back to `name`: it ends.
  s.reaches.set(name, false);
  const found =
    s.recursive.has(name) ||
    defInfo(s.defs[name] as Json).refs.some(
      (r) => Object.hasOwn(s.defs, r) && reachesRecursion(r, s),
    );
  s.reaches.set(name, found);
  return found;
}

/**
 * For consumers without `$defs` support: every `$ref` is replaced by a copy of its definition,
 * and `$defs` goes, as long as the tool stays within `budget` bytes. A reference that repeats a
 * definition it is already inside (recursion) becomes a stub `{type, description}` accepting any
 * value of its type (inline.recursion_cut). A tool that would pass the budget keeps its $defs
 * (inline.kept_defs). Tools without $defs are returned as they are.
 */
export function inlineDefs(tool: ToolDefinition, budget: number, report: Report): ToolDefinition {
  const defs = tool.inputSchema.$defs as Record<string, Json> | undefined;
  if (!defs || Object.keys(defs).length === 0) return tool;
  const { $defs: _defs, ...root } = tool.inputSchema;
  const state: InlineState = {
    defs,
    budget,
    spent: 0,
    cut: new Set(),
    memo: new Map(),
    recursive: recursiveDefs(defs),
    reaches: new Map(),
  };
  let inlined: ToolDefinition | undefined;
  try {
    const inputSchema = inlineNode(root as Json, [], state) as ToolDefinition["inputSchema"];
    inlined = { ...tool, inputSchema };
  } catch (err) {
    if (!(err instanceof OverBudget)) throw err;
  }
  if (!inlined || jsonBytes(inlined) > budget) {
    report(
      "inline.kept_defs",
      `tool ${tool.name}: inlining its $defs would pass the ${budget}-byte inline budget; it keeps $defs`,
    );
    return tool;
  }
  if (state.cut.size > 0)
    report(
      "inline.recursion_cut",
      `tool ${tool.name}: recursive ${[...state.cut].sort().join(", ")} not inlined at the repeat`,
    );
  return inlined;
}
