import type { JetStreamManager, StreamConfig } from "@nats-io/jetstream";
import { isNoResponders } from "./errors.ts";
import { isJsError } from "./js-errors.ts";

const ATTEMPTS = 4;
const RETRY_MS = 100;

/**
 * Runs a create of a stream or bucket that several processes may make at once. nats-server 2.9
 * can refuse the second of two concurrent creates of the same stream with "subjects overlap with
 * an existing stream" (10065) or "stream name already in use" (10058) while the first is still
 * being set up; a later attempt (100, 200, 300 ms on) finds the stream. A real conflict (another
 * stream holds the subjects) fails every attempt and is thrown.
 */
export async function retryCreationRace<T>(create: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await create();
    } catch (err) {
      const raced = isJsError(err, "streamSubjectOverlap", "streamNameInUse");
      if (!raced || attempt >= ATTEMPTS) throw err;
      await Bun.sleep(RETRY_MS * attempt);
    }
  }
}

/**
 * Runs a start-up write to a stream or bucket that another process may be creating at the same
 * moment. nats-server 2.9.10 can answer a concurrent create of the same stream (this process's)
 * before the first one has it listening on its subjects, so a write right after finds "no
 * responders" (CI saw it: a service's first write to `sy_meta`, every service starting at once on
 * a fresh store). A later attempt (100, 200, 300 ms on) finds the stream listening; a subject no
 * stream takes fails every attempt and is thrown.
 */
export async function retryWhileSettingUp<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (!isNoResponders(err) || attempt >= ATTEMPTS) throw err;
      await Bun.sleep(RETRY_MS * attempt);
    }
  }
}

/** The stream settings that may change after creation and are kept in step with the config. */
const MUTABLE: readonly (keyof StreamConfig)[] = [
  "max_age",
  "max_bytes",
  "duplicate_window",
  "num_replicas",
];

/**
 * Creates a stream, or updates its mutable settings when they differ from `wanted`. Safe to run
 * from every service at start, concurrently: a creation race resolves to the same config, and a
 * create nats-server 2.9 refuses while another process's create of the same stream is being set
 * up is tried again (retryCreationRace).
 */
export function ensureStream(
  jsm: JetStreamManager,
  wanted: Partial<StreamConfig> & { name: string },
): Promise<void> {
  return retryCreationRace(() => ensureStreamOnce(jsm, wanted));
}

async function ensureStreamOnce(
  jsm: JetStreamManager,
  wanted: Partial<StreamConfig> & { name: string },
): Promise<void> {
  try {
    const info = await jsm.streams.info(wanted.name);
    const current = info.config as unknown as Record<string, unknown>;
    const target = wanted as unknown as Record<string, unknown>;
    if (MUTABLE.some((key) => key in target && current[key] !== target[key])) {
      await jsm.streams.update(wanted.name, { ...info.config, ...wanted });
    }
  } catch (err) {
    if (!isJsError(err, "streamNotFound")) throw err;
    try {
      await jsm.streams.add(wanted);
    } catch (addErr) {
      if (!isJsError(addErr, "streamNameInUse")) throw addErr;
    }
  }
}
