import { MANUAL_CODES } from "./manual/codes.ts";
import { MCP_CODES } from "./mcp/codes.ts";
import { OPENAPI_CODES } from "./openapi/codes.ts";
import { OVERLAY_CODES } from "./overlay/codes.ts";
import { SDK_CODES } from "./sdk/codes.ts";

/** The diagnostic codes of every source (each source's table lives in its own folder). */
export const SOURCE_CODES = {
  ...OPENAPI_CODES,
  ...OVERLAY_CODES,
  ...MCP_CODES,
  ...MANUAL_CODES,
  ...SDK_CODES,
} as const;
