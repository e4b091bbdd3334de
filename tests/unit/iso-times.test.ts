/**
 * The times the hub writes are read by arithmetic where they are in toISOString's shape
 * (shared/clock/iso.ts): the `date-time` format's check and `parseIsoMs` must answer exactly what
 * their definitions (the regex with Date.parse, and Date.parse) answer, on every text.
 */
import { describe, expect, test } from "bun:test";
import { parseIsoMs } from "../../shared/clock/index.ts";
import { isDateTime } from "../../shared/schema/index.ts";

/** The format's definition: RFC 3339's shape, and a time Date.parse reads. */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;
const byDefinition = (text: string) => DATE_TIME.test(text) && !Number.isNaN(Date.parse(text));

describe("times in toISOString's shape", () => {
  test("agrees with its definition on every month, day and hour boundary of toISOString's shape", () => {
    const pad = (n: number, width = 2) => String(n).padStart(width, "0");
    let checked = 0;
    for (const year of [0, 1, 1970, 2024, 2026, 9999]) {
      for (let month = 0; month <= 13; month++) {
        for (let day = 0; day <= 32; day++) {
          for (const [h, m, s] of [
            [0, 0, 0],
            [23, 59, 59],
            [24, 0, 0],
            [12, 60, 0],
            [12, 0, 60],
          ] as const) {
            const text = `${pad(year, 4)}-${pad(month)}-${pad(day)}T${pad(h)}:${pad(m)}:${pad(s)}.123Z`;
            expect([text, isDateTime(text)]).toEqual([text, byDefinition(text)]);
            expect([text, parseIsoMs(text)]).toEqual([text, Date.parse(text)]);
            checked++;
          }
        }
      }
    }
    expect(checked).toBe(6 * 14 * 33 * 5);
  });

  test("agrees with its definition on the shapes toISOString does not write", () => {
    const texts = [
      new Date().toISOString(),
      "2026-11-29T04:05:06Z",
      "2026-11-29T04:05:06.1Z",
      "2026-11-29T04:05:06.123456Z",
      "2026-11-29t04:05:06.123z",
      "2026-11-29T04:05:06.123+01:00",
      "2026-11-29T04:05:06.123+24:00",
      "2026-11-29T04:05:06.123-23:59",
      "2026-11-29 04:05:06.123Z",
      "2026-11-29T04:05:06.12xZ",
      "2026-11-29T04:05:06.123",
      "2026-11-29T04:05:06,123Z",
      "+012026-11-29T04:05:06.123Z",
      "2026-1a-29T04:05:06.123Z",
      "２026-11-29T04:05:06.123Z",
      "",
      "not a time at all, 24 ch",
    ];
    for (const text of texts) {
      expect([text, isDateTime(text)]).toEqual([text, byDefinition(text)]);
      expect([text, parseIsoMs(text)]).toEqual([text, Date.parse(text)]);
    }
  });

  test("takes every time the hub writes", () => {
    const start = Date.UTC(2026, 0, 1);
    for (let i = 0; i < 2_000; i++) {
      const text = new Date(start + i * 15_778_463_997).toISOString();
      expect([text, isDateTime(text)]).toEqual([text, true]);
      expect([text, parseIsoMs(text)]).toEqual([text, start + i * 15_778_463_997]);
    }
  });
});
