/** The SDK restates the hub's contract (problem codes, the job record); these keep them in step. */
import { describe, expect, test } from "bun:test";
import type { Static } from "@sinclair/typebox";
import { type Job, PROBLEM_CODES } from "../../sdk/src/index.ts";
import { JobResourceSchema } from "../../services/ingress/openapi.ts";
import { hubProblemCodes as hubCodes } from "./hub.ts";

/** Codes the SDK knows ahead of the hub (none since issue 16 brought the cancel endpoint). */
const AHEAD_OF_THE_HUB = new Set<string>();

describe("problem codes", () => {
  test("every code the hub can send is in the SDK with the same status", () => {
    const codes = hubCodes();
    expect(codes.size).toBeGreaterThan(15);
    for (const [code, status] of codes) {
      expect([code, (PROBLEM_CODES as Record<string, number>)[code]]).toEqual([code, status]);
    }
  });

  test("the SDK knows no code the hub lacks, except the announced ones", () => {
    const codes = hubCodes();
    const extra = Object.keys(PROBLEM_CODES).filter(
      (c) => !codes.has(c) && !AHEAD_OF_THE_HUB.has(c),
    );
    expect(extra).toEqual([]);
  });
});

describe("the job record", () => {
  test("the SDK's Job and the hub's schema describe the same record", () => {
    // Compile-time: each assignable to the other (tsc fails the build otherwise).
    const fromHub = (j: Static<typeof JobResourceSchema>): Job => j;
    const toHub = (j: Job): Static<typeof JobResourceSchema> => j;
    expect(typeof fromHub).toBe("function");
    expect(typeof toHub).toBe("function");
    const sdkKeys: (keyof Job)[] = [
      "job_id",
      "request_id",
      "route",
      "status",
      "created_at",
      "updated_at",
      "completed_at",
      "output",
      "error",
      "callback",
      "retry_of",
      "retried_as",
    ];
    expect(sdkKeys.sort()).toEqual(
      Object.keys(JobResourceSchema.properties).sort() as (keyof Job)[],
    );
  });
});
