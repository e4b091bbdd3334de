import { readdirSync, readFileSync } from "node:fs";
import { extname, join } from "node:path";
import type { Elysia } from "elysia";
import {
  InvalidRequestError,
  NotFoundError,
  UnauthorizedError,
} from "../../shared/errors/index.ts";
import type { OperatorCaller } from "./auth.ts";
import { type AdminContext, callerOf, json, NO_STORE, readBody } from "./context.ts";
import { requireSameOrigin } from "./same-origin.ts";
import { noQuery } from "./search.ts";

const ASSET_DIR = join(import.meta.dir, "console");
const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
};

interface Asset {
  readonly body: Uint8Array;
  readonly type: string;
  readonly etag: string;
}

/** The console's files, read once: HTML, its ES modules, CSS and an icon. Nothing else is served. */
function loadAssets(): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const name of readdirSync(ASSET_DIR)) {
    const type = TYPES[extname(name)];
    if (!type) continue;
    const body = readFileSync(join(ASSET_DIR, name));
    const etag = `"${Bun.hash(body).toString(36)}"`;
    assets.set(name, { body, type, etag });
  }
  return assets;
}

function serve(asset: Asset | undefined, request: Request): Response {
  if (!asset) throw new NotFoundError({ detail: "No such console file." });
  if (request.headers.get("if-none-match") === asset.etag) {
    return new Response(null, { status: 304, headers: { etag: asset.etag } });
  }
  return new Response(asset.body, {
    headers: { "content-type": asset.type, etag: asset.etag, "cache-control": "no-cache" },
  });
}

/** The operator calling, or undefined when nobody is logged in (not an error here). */
function loggedIn(ctx: AdminContext, request: Request): Promise<OperatorCaller | undefined> {
  return callerOf(ctx, request).catch((err: unknown) => {
    if (err instanceof UnauthorizedError) return undefined;
    throw err;
  });
}

/** Adds Set-Cookie headers (one per cookie path). */
function withCookies(response: Response, cookies: readonly string[]): Response {
  for (const cookie of cookies) response.headers.append("set-cookie", cookie);
  return response;
}

/**
 * The web console (docs/operations.md, "The console"): self-contained static files at
 * `console.path`, and its login (an operator token becomes a session cookie: HttpOnly,
 * SameSite=Strict, Secure unless console.secure_cookie is false) and logout. Everything else the
 * page does goes through the operator API with the cookie and the session's CSRF token.
 */
export function consoleRoutes(app: Elysia, ctx: AdminContext): void {
  const base = ctx.config.console.path;
  const assets = loadAssets();
  app
    // The page's links are relative to `<base>/`.
    // (Elysia routes `/console` and `/console/` alike: the path itself says which it was.)
    .get(base, ({ request }) =>
      new URL(request.url).pathname.endsWith("/")
        ? serve(assets.get("index.html"), request)
        : new Response(null, { status: 302, headers: { location: `${base}/` } }),
    )
    .get(`${base}/state`, async ({ request }) => {
      // The page asks who is logged in; nobody is an answer, not an error.
      const caller = await loggedIn(ctx, request);
      noQuery(request);
      if (!caller) return json({ operator: null });
      const { id, role, read_payloads } = caller.operator;
      return json({ operator: { id, role, read_payloads }, csrf_token: caller.csrf ?? "" });
    })
    .get(`${base}/assets/:file`, ({ request, params }) => serve(assets.get(params.file), request))
    .post(
      `${base}/login`,
      async ({ request }) => {
        requireSameOrigin(request, "Log in from the console page itself");
        noQuery(request);
        const body = (await readBody(request)) ?? {};
        const token = body.token;
        const extra = Object.keys(body).find((k) => k !== "token");
        if (
          extra !== undefined ||
          typeof token !== "string" ||
          token.length === 0 ||
          token.length > 4096
        ) {
          const pointer = extra === undefined ? "/token" : `/${extra}`;
          throw new InvalidRequestError({
            detail:
              extra === undefined ? "token: must be an operator token" : `${extra}: unknown field`,
            errors: [{ pointer, message: extra === undefined ? "is required" : "unknown field" }],
          });
        }
        const cookies = await ctx.auth.login(token, ctx.addressOf(request));
        ctx.logger.info({ address: ctx.addressOf(request) }, "console login");
        return withCookies(new Response(null, { status: 204, headers: NO_STORE }), cookies);
      },
      { parse: "none" },
    )
    .post(
      `${base}/logout`,
      async ({ request }) => {
        // Without a live session (it ended, or another tab logged out) there is nothing to
        // revoke: the cookie is cleared all the same, so the page always gets back to its login.
        // A bearer token (ending an operator's sessions from the CLI) must be valid.
        const caller = request.headers.has("authorization")
          ? await callerOf(ctx, request)
          : await loggedIn(ctx, request);
        if (caller) ctx.auth.checkCsrf(request, caller);
        noQuery(request);
        const cookies = await ctx.auth.logout(caller);
        if (caller) {
          ctx.logger.info({ operator: caller.operator.id, via: caller.via }, "console logout");
        }
        return withCookies(json({ logged_out: true }), cookies);
      },
      { parse: "none" },
    );
}
