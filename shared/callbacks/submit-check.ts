import type { ClientConfig } from "../config/index.ts";
import { CallbackUrlRefusedError } from "../errors/index.ts";
import type { CallbackUrlCheck } from "../net/index.ts";

/**
 * Submit-time check of a run's callback_url (POST /run): the client must have a signing secret
 * (Switchyard never sends unsigned callbacks), and the URL must pass the egress policy for what
 * can be judged without DNS (scheme, userinfo, literal IPs, localhost and metadata names):
 * `checkUrl` is the policy's check, an EgressChecker's `url` (made once, remembered per URL).
 * Throws CallbackUrlRefusedError (400) whose detail names the rule.
 */
export function checkCallbackAtSubmit(
  client: ClientConfig,
  url: string,
  checkUrl: (url: string) => CallbackUrlCheck,
): void {
  const refuse = (message: string) =>
    new CallbackUrlRefusedError({
      detail: message,
      errors: [{ pointer: "/callback_url", message }],
    });
  if (client.callback_secrets.length === 0) {
    throw refuse(
      "callback_url needs a signing secret, and this client has none configured (no_signing_secret); ask the operator to add callback_secrets",
    );
  }
  const checked = checkUrl(url);
  if (!checked.ok)
    throw refuse(
      checked.message.includes(`(${checked.rule})`)
        ? checked.message
        : `${checked.message} (${checked.rule})`,
    );
}
