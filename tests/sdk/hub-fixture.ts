/**
 * Starts the SDK test hub (tests/sdk/hub.ts: real hub, private nats-server, fault proxy) for a
 * test in another language, prints one JSON line with its addresses, tokens, callback secrets and
 * the hub's problem codes, and stops everything when its standard input closes (the test ended
 * or died) or on SIGTERM/SIGINT. Used by tests/sdk/python.
 */
import { removeTestIndexRoot } from "../helpers/hub.ts";
import { hubProblemCodes, startSdkHub } from "./hub.ts";

const sdk = await startSdkHub();
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await sdk.stop();
  // Not a bun test process: tests/cleanup.ts does not run here.
  removeTestIndexRoot();
  process.exit(0);
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();

console.log(
  JSON.stringify({
    base_url: sdk.baseUrl,
    proxy_url: sdk.proxy.url,
    clients: sdk.clients,
    problem_codes: Object.fromEntries(hubProblemCodes()),
  }),
);
