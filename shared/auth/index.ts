import { createHash } from "node:crypto";

/** SHA-256 (hex) of a token: what the config stores instead of the token. */
export function hashToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}
