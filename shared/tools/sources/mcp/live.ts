import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export type McpServerSpec =
  | {
      transport: "stdio";
      command: string;
      args?: string[];
      env?: Record<string, string>;
      cwd?: string;
    }
  | { transport: "http"; url: string };

/** Pages are followed until nextCursor is absent; this bounds a server that never stops. */
export const MAX_MCP_PAGES = 1000;

/**
 * Lists every tool of a live MCP server (stdio or streamable HTTP), following nextCursor.
 * Returns a tools/list-shaped result that compileMcpTools() reads. Throws on transport errors;
 * the loader turns that into an mcp.fetch_failed diagnostic.
 */
export async function fetchMcpTools(
  spec: McpServerSpec,
  timeoutMs = 30_000,
): Promise<{ tools: unknown[] }> {
  const client = new Client({ name: "switchyard-tools-compile", version: "1.0.0" });
  const transport =
    spec.transport === "stdio"
      ? new StdioClientTransport({
          command: spec.command,
          args: spec.args ?? [],
          ...(spec.env ? { env: spec.env } : {}),
          ...(spec.cwd ? { cwd: spec.cwd } : {}),
          stderr: "ignore",
        })
      : new StreamableHTTPClientTransport(new URL(spec.url));
  await client.connect(transport, { timeout: timeoutMs });
  try {
    const tools: unknown[] = [];
    const seen = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_MCP_PAGES; page++) {
      const res = await client.listTools(cursor ? { cursor } : {}, { timeout: timeoutMs });
      tools.push(...res.tools);
      cursor = res.nextCursor;
      if (!cursor || seen.has(cursor)) break;
      seen.add(cursor);
    }
    return { tools };
  } finally {
    await client.close().catch(() => {});
  }
}
