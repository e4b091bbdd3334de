import { FormatRegistry } from "@sinclair/typebox";

/** True for an absolute http(s) URL with a host. */
export function isHttpUrl(text: string): boolean {
  if (!URL.canParse(text)) return false;
  const url = new URL(text);
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/**
 * TypeBox refuses values of formats it does not know, so the formats our schemas use are
 * registered once here. Imported for its effect by every module that compiles such a schema.
 */
export function registerFormats(): void {
  if (!FormatRegistry.Has("uri")) FormatRegistry.Set("uri", isHttpUrl);
  if (!FormatRegistry.Has("date-time")) {
    FormatRegistry.Set("date-time", (v) => DATE_TIME.test(v) && !Number.isNaN(Date.parse(v)));
  }
}

registerFormats();
