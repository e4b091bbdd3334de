import { describe, expect, test } from "bun:test";
import { validateRunRequest } from "../../services/ingress/index.ts";
import { InvalidRequestError } from "../../shared/errors/index.ts";

const valid = { request_id: "r-1", route: "demo.echo", input: "hello" };

function refusal(body: unknown): InvalidRequestError {
  try {
    validateRunRequest(body);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidRequestError);
    return err as InvalidRequestError;
  }
  throw new Error("expected a refusal");
}

describe("run request validation", () => {
  test("accepts the minimal body and every optional field", () => {
    expect(validateRunRequest(valid)).toEqual(valid);
    const full = {
      ...valid,
      metadata: { principal: { id: "u1", tenant: "t1", role: "x" }, order: 42 },
      callback_url: "https://example.com/hook?x=1",
    };
    expect(validateRunRequest(full)).toEqual(full);
  });

  test.each([["request_id"], ["route"], ["input"]])("%s is required", (field) => {
    const body: Record<string, unknown> = { ...valid };
    delete body[field];
    expect(refusal(body).errors).toEqual([{ pointer: `/${field}`, message: "is required" }]);
  });

  test.each([
    ["request_id", 5],
    ["route", null],
    ["input", { text: "x" }],
  ])("%s must be a string", (field, value) => {
    expect(refusal({ ...valid, [field]: value }).errors?.[0]).toEqual({
      pointer: `/${field}`,
      message: "must be a string",
    });
  });

  test("an empty request_id is refused", () => {
    expect(refusal({ ...valid, request_id: "" }).errors?.[0]?.pointer).toBe("/request_id");
  });

  test("unknown fields are refused by name, not stripped", () => {
    const err = refusal({ ...valid, extra: 1, source: "crm" });
    expect(err.errors).toEqual([
      { pointer: "/extra", message: "unknown field 'extra'" },
      { pointer: "/source", message: "unknown field 'source'" },
    ]);
  });

  test("'callback' points to callback_url", () => {
    const err = refusal({ ...valid, callback: "https://example.com" });
    expect(err.errors?.[0]?.pointer).toBe("/callback");
    expect(err.errors?.[0]?.message).toContain("use 'callback_url'");
  });

  test("a field of the wrong JSON type is worded by its schema type", () => {
    expect(refusal({ ...valid, metadata: "x" }).errors).toEqual([
      { pointer: "/metadata", message: "must be an object" },
    ]);
    expect(refusal({ ...valid, metadata: { principal: "u1" } }).errors).toEqual([
      { pointer: "/metadata/principal", message: "must be an object" },
    ]);
  });

  test("metadata must be an object; principal id and tenant must be strings", () => {
    expect(refusal({ ...valid, metadata: "x" }).errors?.[0]?.pointer).toBe("/metadata");
    expect(refusal({ ...valid, metadata: { principal: "u1" } }).errors?.[0]?.pointer).toBe(
      "/metadata/principal",
    );
    expect(
      refusal({ ...valid, metadata: { principal: { id: 1, tenant: "t" } } }).errors?.[0]?.pointer,
    ).toBe("/metadata/principal/id");
    expect(refusal({ ...valid, metadata: { principal: { id: "u" } } }).errors?.[0]?.pointer).toBe(
      "/metadata/principal/tenant",
    );
  });

  test.each([
    ["ftp://example.com/x"],
    ["/relative/path"],
    ["not a url"],
    ["javascript:alert(1)"],
    [""],
  ])("callback_url %p is refused", (url) => {
    expect(refusal({ ...valid, callback_url: url }).errors?.[0]).toEqual({
      pointer: "/callback_url",
      message: "must be an absolute http or https URL",
    });
  });

  test.each([[null], [[]], ["text"], [42]])("a body of %p is refused as not an object", (body) => {
    expect(refusal(body).errors?.[0]?.message).toBe("must be a JSON object");
  });
});

describe("run request length messages", () => {
  test("an empty request_id says so, a long one names the limit", () => {
    expect(refusal({ ...valid, request_id: "" }).errors?.[0]?.message).toBe("must not be empty");
    expect(refusal({ ...valid, request_id: "x".repeat(256) }).errors?.[0]?.message).toBe(
      "must be at most 255 characters",
    );
  });
});
