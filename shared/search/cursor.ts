import type { PagePosition } from "./types.ts";

const VERSION = "1";
const JOB_ID = /^job_[A-Za-z0-9_-]{22}$/;

/**
 * The opaque `cursor` of a list page: the position after the page's last job in the newest-first
 * order (created_at, job_id), base64url. Not a secret and not signed: it only ever narrows the
 * caller's own filtered jobs, which the server always scopes by the caller.
 */
export function encodeCursor(position: PagePosition): string {
  return Buffer.from(`${VERSION}.${position.createdMs}.${position.jobId}`).toString("base64url");
}

/** The position of a cursor, or undefined when it is not one this hub wrote. */
export function decodeCursor(cursor: string): PagePosition | undefined {
  if (cursor.length === 0 || cursor.length > 128 || !/^[A-Za-z0-9_-]+$/.test(cursor)) {
    return undefined;
  }
  const [version, ms, jobId, ...rest] = Buffer.from(cursor, "base64url").toString().split(".");
  if (version !== VERSION || rest.length > 0 || ms === undefined || jobId === undefined) {
    return undefined;
  }
  const createdMs = Number(ms);
  if (!/^\d{1,15}$/.test(ms) || !Number.isSafeInteger(createdMs) || !JOB_ID.test(jobId)) {
    return undefined;
  }
  return { createdMs, jobId };
}
