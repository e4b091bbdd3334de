/** Compares dotted versions numerically: negative when a < b. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(/[.-]/).map((p) => Number.parseInt(p, 10) || 0);
  const pb = b.split(/[.-]/).map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * The first nats-server whose file store keeps `max_bytes` with discard new exactly. Below it the
 * pre-check counts a message's header and data only, while the store also counts its subject and
 * 34 bytes of record (server/filestore.go, storeRawMsg and fileStoreMsgSize in 2.9.10): a publish
 * that passes the check within that much of the limit is stored, and the stream then removes its
 * oldest messages to get back under it (nats-server issue 4771, fixed by pull request 4772).
 */
export const EXACT_BYTE_LIMIT_NATS = "2.10.5";

/** Whether a stream on this nats-server can hold `max_bytes` without ever dropping stored messages. */
export function keepsByteLimitExactly(serverVersion: string): boolean {
  return compareVersions(serverVersion, EXACT_BYTE_LIMIT_NATS) >= 0;
}
