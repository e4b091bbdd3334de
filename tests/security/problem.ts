import { expect } from "bun:test";

/** Asserts an RFC 9457 problem answer with this status and code; returns the parsed body. */
export async function expectProblem(
  res: Response,
  status: number,
  code: string,
): Promise<Record<string, unknown>> {
  const text = await res.text();
  expect({ status: res.status, text }).toMatchObject({ status });
  expect(res.headers.get("content-type")).toBe("application/problem+json");
  const body = JSON.parse(text) as Record<string, unknown>;
  expect(body).toMatchObject({ status, code });
  expect(typeof body.type).toBe("string");
  expect(typeof body.title).toBe("string");
  expect(typeof body.detail).toBe("string");
  return body;
}
