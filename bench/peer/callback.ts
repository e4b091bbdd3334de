/**
 * The completion callback both peers' workers send: a Standard Webhooks-signed job.completed POST
 * (the standardwebhooks package, as a Node user would). A non-2xx answer throws, so the queue
 * (BullMQ or graphile-worker) retries the job with its own backoff.
 */
import { Webhook } from "standardwebhooks";

export interface CompletedRun {
  readonly job_id: string;
  readonly request_id: string;
  readonly route: string;
  readonly output: string;
  readonly created_at: string;
  readonly completed_at: string;
}

export function createCallbackSender(secret: string) {
  const webhook = new Webhook(secret);
  return async (callbackUrl: string, run: CompletedRun): Promise<void> => {
    const now = new Date();
    const body = JSON.stringify({
      type: "job.completed",
      timestamp: now.toISOString(),
      data: { ...run, status: "done" },
    });
    const id = `msg_${run.job_id}`;
    const res = await fetch(callbackUrl, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "webhook-id": id,
        "webhook-timestamp": String(Math.floor(now.getTime() / 1000)),
        "webhook-signature": webhook.sign(id, now, body),
      },
      body,
    });
    await res.arrayBuffer();
    if (!res.ok) throw new Error(`callback answered ${res.status}`);
  };
}
