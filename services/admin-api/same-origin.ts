import { CsrfError } from "./errors.ts";

/**
 * The console's own origin is the one the browser addressed: the request's Host. (A proxy in front
 * must pass Host through unchanged; docs/operations.md, "The console".) Compared as URL hosts,
 * so a default port written out or left off is the same origin.
 */
function sameHost(url: string, request: Request): boolean {
  const host = request.headers.get("host");
  if (host === null || host === "") return false;
  try {
    const claimed = new URL(url);
    if (claimed.protocol !== "http:" && claimed.protocol !== "https:") return false;
    return claimed.host === new URL(`${claimed.protocol}//${host}`).host;
  } catch {
    return false;
  }
}

/**
 * Why an unsafe console request (an action with a session cookie, a login, a logout) is not from
 * the console's own origin, or undefined when it is. Every header present must agree:
 * `Sec-Fetch-Site` must be `same-origin`; `Origin` (`null` included) must be the console's origin;
 * where `Origin` is absent, `Referer` must be. A request with none of the three is not from a
 * browser (every browser sends `Origin` on a POST, and cross-site requests are what this guards
 * against), so it passes here and still needs the session's CSRF token; the same rule as Go's
 * net/http CrossOriginProtection, plus `Referer`.
 */
export function crossOriginReason(request: Request): string | undefined {
  const site = request.headers.get("sec-fetch-site");
  if (site !== null && site !== "same-origin") return `Sec-Fetch-Site is ${site}`;
  const origin = request.headers.get("origin");
  if (origin !== null) {
    return sameHost(origin, request) ? undefined : "Origin is not the console's origin";
  }
  const referer = request.headers.get("referer");
  if (referer !== null && !sameHost(referer, request)) {
    return "Referer is not the console's origin";
  }
  return undefined;
}

/** Refuses an unsafe console request that comes from another origin ({@link crossOriginReason}). */
export function requireSameOrigin(request: Request, detail: string): void {
  const reason = crossOriginReason(request);
  if (reason !== undefined) throw new CsrfError({ detail: `${detail} (${reason}).` });
}
