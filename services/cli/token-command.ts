/**
 * `switchyard token new <id> [--operator]`: a new random token, shown once, and the SHA-256 that
 * goes in the config. Clients and operators both hold `token_sha256` lists; their ids differ:
 * a client id travels in NATS subjects ([A-Za-z0-9_-]), an operator id may also hold `.` and `@`
 * (an e-mail address). An id that only an operator may have is an operator's.
 */
import { randomBytes } from "node:crypto";
import { hashToken } from "../../shared/auth/index.ts";
import { CLIENT_ID_PATTERN, OPERATOR_ID_PATTERN } from "../../shared/config/index.ts";

export interface TokenNewRequest {
  readonly id: string;
  /** --operator: the id is an operator's even where a client could have it. */
  readonly operator: boolean;
}

/** The printed token and config snippet, or why the id cannot have one. */
export type TokenNewResult =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly problem: string };

const isClientId = (id: string) => new RegExp(CLIENT_ID_PATTERN).test(id);
const isOperatorId = (id: string) => new RegExp(OPERATOR_ID_PATTERN).test(id);

export function newToken(request: TokenNewRequest, random = randomBytes): TokenNewResult {
  const { id } = request;
  if (request.operator && !isOperatorId(id)) {
    return { ok: false, problem: "an operator id is [A-Za-z0-9_.@-], up to 64 characters" };
  }
  if (!isClientId(id) && !isOperatorId(id)) {
    return {
      ok: false,
      problem:
        "an id is [A-Za-z0-9_-] for a client, [A-Za-z0-9_.@-] for an operator, up to 64 characters",
    };
  }
  const operator = request.operator || !isClientId(id);
  // The id in the token tells whose it is at a glance (a leaked token, a secret scanner); kept to
  // the characters of an HTTP bearer token.
  const token = `sy_${id.replace(/[^A-Za-z0-9_-]/g, "-")}_${random(32).toString("base64url")}`;
  const section = operator ? "operators" : "clients";
  const lines = [
    `token (shown once; give it to the ${operator ? "operator" : "client"}, store it nowhere else): ${token}`,
    `add the hash to the ${operator ? "operator" : "client"}'s token_sha256 list in switchyard.yaml:`,
    `${section}:`,
    `  - id: ${id}`,
    `    token_sha256: ["${hashToken(token)}"]`,
  ];
  // An operator needs a role; the one that changes nothing, until someone decides otherwise.
  if (operator)
    lines.push("    role: viewer                # operator: may also cancel, retry and redeliver");
  if (!operator) lines.push("(an operator's token: switchyard token new <id> --operator)");
  return { ok: true, text: `${lines.join("\n")}\n` };
}
