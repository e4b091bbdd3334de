import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { JobViewCache } from "./view-cache.ts";

/*
 * Telling every reader that a settled job view changed (view-cache.ts). The projector publishes a
 * core NATS notice on `sy.view.<client_id>.<job_id>` with the view's new KV revision each time it
 * writes over a settled view (an operator's retry, a callback redelivery request: rare, so the
 * notices cost nothing on the common path); every ingress replica listens and drops its cached
 * copy.
 */

export const VIEW_NOTICE_SUBJECT_ROOT = "sy.view";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The notice's subject for a view key (`<client_id>.<job_id>`, jobViewKey). */
export function viewNoticeSubject(key: string): string {
  return `${VIEW_NOTICE_SUBJECT_ROOT}.${key}`;
}

/** Announces that the settled view of `key` was rewritten at KV `revision`. Fire and forget. */
export function publishViewChanged(
  nc: NatsConnection,
  change: { readonly key: string; readonly revision: number },
): void {
  nc.publish(viewNoticeSubject(change.key), encoder.encode(String(change.revision)));
}

/**
 * Drops each announced view from `cache`, and empties it after a reconnect (notices published
 * while disconnected are lost). Returns the stop function.
 */
export function followViewChanges(nc: NatsConnection, cache: JobViewCache): () => void {
  const prefix = `${VIEW_NOTICE_SUBJECT_ROOT}.`;
  const notices: Subscription = nc.subscribe(`${prefix}>`, {
    callback: (err, msg) => {
      if (err) return;
      const revision = Number(decoder.decode(msg.data));
      if (!Number.isSafeInteger(revision) || revision < 1) return;
      cache.invalidate(msg.subject.slice(prefix.length), revision);
    },
  });
  let following = true;
  void (async () => {
    for await (const status of nc.status()) {
      if (!following) return;
      if (status.type === "reconnect") cache.clear();
    }
  })();
  return () => {
    following = false;
    notices.unsubscribe();
  };
}
