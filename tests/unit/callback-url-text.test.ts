import { describe, expect, test } from "bun:test";
import { validateRunRequest } from "../../services/ingress/run-request.ts";
import { InvalidRequestError } from "../../shared/errors/index.ts";

// The WHATWG URL parser accepts these and calls another URL than the text says (it drops leading
// and trailing controls and spaces, and tabs and newlines anywhere), or one that can never answer
// (port 0). Found by tests/fuzz/run-request.fuzz.test.ts; refused as 400 naming /callback_url.

const valid = { request_id: "r1", route: "demo.echo", input: "x" };

function refusal(callback_url: string) {
  try {
    validateRunRequest({ ...valid, callback_url });
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidRequestError);
    return (err as InvalidRequestError).errors?.[0];
  }
  throw new Error(`accepted ${JSON.stringify(callback_url)}`);
}

const SPACES = "must not contain spaces or control characters (percent-encode them)";

describe("callback_url text the URL parser would change", () => {
  test.each([
    [" https://hooks.example.com/cb"],
    ["https://hooks.example.com/cb "],
    ["\thttps://hooks.example.com/cb"],
    ["https://hooks.exa\nmple.com/cb"],
    ["https://hooks.example.com/c\rb"],
    ["https://hooks.example.com/cb\u0000"],
    ["https://hooks.example.com/a b"],
    ["https://hooks.example.com/\u007f"],
  ])("%p is refused", (url) => {
    expect(refusal(url)).toEqual({ pointer: "/callback_url", message: SPACES });
  });

  test.each([["https://hooks.example.com:0/cb"], ["http://hooks.example.com:00000/"]])(
    "%p (port 0) is refused",
    (url) => {
      expect(refusal(url)).toEqual({ pointer: "/callback_url", message: "must not use port 0" });
    },
  );

  test.each([
    ["https://hooks.example.com/a%20b"],
    ["https://hooks.example.com:65535/cb"],
    ["https://hooks.example.com/\u00a0\u2028"],
    ["https://b\u00fccher.example/cb"],
  ])("%p is accepted", (url) => {
    expect(validateRunRequest({ ...valid, callback_url: url }).callback_url).toBe(url);
  });
});
