/** The console's calls: the operator API with the session cookie and the CSRF token. */

const BASE = "/admin/v1";
let csrf = "";

/** A problem answer of the hub, shown as its detail. */
export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail ?? `HTTP ${status}`);
    this.status = status;
    this.code = problem?.code ?? `http_${status}`;
  }
}

async function call(method, path, body) {
  const res = await fetch(path, {
    method,
    credentials: "same-origin",
    headers: {
      accept: "application/json",
      ...(method === "GET" ? {} : { "x-csrf-token": csrf }),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const parsed = text === "" ? undefined : JSON.parse(text);
  if (!res.ok) throw new ApiError(res.status, parsed);
  return { status: res.status, body: parsed, headers: res.headers };
}

/** Who is logged in ({operator: null} when nobody): never a 401, so a logged-out page stays clean. */
export async function state(consoleBase) {
  const { body } = await call("GET", `${consoleBase}/state`);
  csrf = body.csrf_token ?? "";
  return body;
}

export const login = (consoleBase, token) => call("POST", `${consoleBase}/login`, { token });
export const logout = (consoleBase) => call("POST", `${consoleBase}/logout`);
export const get = (path, query) =>
  call("GET", `${BASE}${path}${query && String(query) ? `?${query}` : ""}`);
export const post = (path, body) => call("POST", `${BASE}${path}`, body);
