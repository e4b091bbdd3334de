import {
  JetStreamApiError,
  type JetStreamClient,
  JetStreamError,
  type JetStreamPublishOptions,
  type PubAck,
  PubHeaders,
} from "@nats-io/jetstream";
import {
  ClosedConnectionError,
  createInbox,
  headers,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  NoRespondersError,
  type Payload,
  PermissionViolationError,
  RequestError,
  type Subscription,
  TimeoutError,
} from "@nats-io/transport-node";

/** nats.js's default JetStream request timeout, kept for publishes that set none. */
const DEFAULT_TIMEOUT_MS = 5_000;
/** How often pending PubAcks are checked for their timeout (only while any are pending). */
const SWEEP_MS = 250;

interface PendingAck {
  readonly resolve: (ack: PubAck) => void;
  readonly reject: (err: Error) => void;
  readonly subject: string;
  readonly deadline: number;
}

interface PubAckBody {
  readonly stream?: string;
  readonly seq?: number;
  readonly domain?: string;
  readonly duplicate?: boolean;
  readonly error?: ConstructorParameters<typeof JetStreamApiError>[0];
}

/** Options this publisher handles itself; any other option goes through nats.js's publish. */
const OWN_OPTIONS = new Set(["headers", "timeout", "msgID", "expect"]);

function ownsOptions(opts: Partial<JetStreamPublishOptions> | undefined): boolean {
  if (opts === undefined) return true;
  for (const key in opts) {
    const value = opts[key as keyof JetStreamPublishOptions];
    if (value !== undefined && !OWN_OPTIONS.has(key)) return false;
  }
  return true;
}

/**
 * The publish's headers with its message id and expectations set, as nats.js's
 * `buildPublishHeaders` sets them (into the given headers, or new ones); undefined without any.
 */
function headersWith(opts: Partial<JetStreamPublishOptions> | undefined): MsgHdrs | undefined {
  const expect = opts?.expect ?? {};
  const fields: [string, string | undefined][] = [
    [PubHeaders.MsgIdHdr, opts?.msgID || undefined],
    [PubHeaders.ExpectedLastMsgIdHdr, expect.lastMsgID || undefined],
    [PubHeaders.ExpectedStreamHdr, expect.streamName || undefined],
    [PubHeaders.ExpectedLastSeqHdr, numeric(expect.lastSequence)],
    [PubHeaders.ExpectedLastSubjectSequenceHdr, numeric(expect.lastSubjectSequence)],
    [
      PubHeaders.ExpectedLastSubjectSequenceSubjectHdr,
      expect.lastSubjectSequenceSubject || undefined,
    ],
  ];
  let out = opts?.headers;
  for (const [name, value] of fields) {
    if (value === undefined) continue;
    out ??= headers();
    out.set(name, value);
  }
  return out;
}

const numeric = (n: number | undefined) => (typeof n === "number" ? `${n}` : undefined);

const decoder = new TextDecoder();

/** The PubAck of a reply, or the error nats.js's `js.publish` would have thrown for it. */
function pubAckOf(msg: Msg, subject: string): PubAck | Error {
  // What nats.js's request mux reads as "no responders": no stream takes the subject (yet).
  if (msg.data.length === 0 && msg.headers?.code === 503) {
    return new RequestError("no responders", { cause: new NoRespondersError(subject) });
  }
  let body: PubAckBody;
  try {
    body = JSON.parse(decoder.decode(msg.data)) as PubAckBody;
  } catch {
    return new JetStreamError("invalid ack response");
  }
  if (body.error) return new JetStreamApiError(body.error);
  if (!body.stream || typeof body.seq !== "number") {
    return new JetStreamError("invalid ack response");
  }
  return {
    stream: body.stream,
    seq: body.seq,
    domain: body.domain ?? "",
    duplicate: body.duplicate ?? false,
  };
}

/**
 * The publishes waiting for their PubAck, by reply id, with one timeout sweep that runs only
 * while any wait.
 */
function createPendingAcks() {
  const pending = new Map<number, PendingAck>();
  let sweep: ReturnType<typeof setInterval> | undefined;

  const stopSweep = () => {
    if (sweep !== undefined) clearInterval(sweep);
    sweep = undefined;
  };
  const expire = () => {
    const now = Date.now();
    for (const [id, entry] of pending) {
      if (entry.deadline > now) continue;
      pending.delete(id);
      entry.reject(new TimeoutError());
    }
    if (pending.size === 0) stopSweep();
  };

  return {
    add(id: number, entry: PendingAck): void {
      pending.set(id, entry);
      sweep ??= setInterval(expire, SWEEP_MS);
    },
    /** The entry of a reply, removed; undefined when it timed out already. */
    take(id: number): PendingAck | undefined {
      const entry = pending.get(id);
      if (entry !== undefined) pending.delete(id);
      return entry;
    },
    /**
     * The server refuses a publish the user may not make with an -ERR naming only the subject;
     * as nats.js does for its requests, the oldest pending publish to that subject takes it.
     */
    refuse(err: PermissionViolationError): void {
      for (const [id, entry] of pending) {
        if (entry.subject !== err.subject) continue;
        pending.delete(id);
        entry.reject(new RequestError(err.message, { cause: err }));
        return;
      }
    },
    failAll(err: Error): void {
      const waiting = [...pending.values()];
      pending.clear();
      stopSweep();
      for (const entry of waiting) entry.reject(err);
    },
  };
}

/**
 * A JetStream client whose `publish` takes its PubAck on one wildcard reply subscription of the
 * connection, matched by a counter in a map, with one timeout sweep while acks are pending.
 *
 * nats.js's `js.publish` makes a request per publish: it copies its options, builds a backoff, a
 * reply token, a timer, a deferred and, on every completed request, a `RequestError` it drops
 * (`RequestOne.cancel`). That machinery was about twice the cost of the publish itself (26 against
 * 14 µs per publish, bench/publish-path.ts), about 5% of the hub's CPU per job over its four
 * JetStream publishes. What this keeps of nats.js's contract: the PubAck it returns, the errors it
 * throws (JetStreamApiError with the server's code, TimeoutError after the timeout, a RequestError
 * caused by NoRespondersError when no stream listens or by PermissionViolationError when the user
 * may not publish there, ClosedConnectionError when the connection closes), the default 5-s timeout, and the headers as given, with `msgID` and `expect` set into
 * them as nats.js sets them. Publishes with any other option (ttl, retries, schedules) go through
 * nats.js unchanged.
 * Every other method is nats.js's own (the returned client inherits from `js`), so a KV bucket
 * opened through it writes through this publish as well.
 */
export function muxPubAcks(
  js: JetStreamClient,
  deps: { readonly nc: NatsConnection; readonly inboxPrefix?: string },
): JetStreamClient {
  const { nc } = deps;
  const prefix = createInbox(deps.inboxPrefix);
  const replyPrefix = `${prefix}.`;
  const pending = createPendingAcks();
  let nextId = 0;
  let subscription: Subscription | undefined;

  const onReply = (err: Error | null, msg: Msg) => {
    if (err) {
      // The subscription ended (a permissions violation, the connection draining): every ack
      // it would have carried is lost, and the next publish subscribes again.
      subscription = undefined;
      pending.failAll(err);
      return;
    }
    const entry = pending.take(Number(msg.subject.slice(replyPrefix.length)));
    if (entry === undefined) return;
    const ack = pubAckOf(msg, entry.subject);
    if (ack instanceof Error) entry.reject(ack);
    else entry.resolve(ack);
  };

  void (async () => {
    for await (const status of nc.status()) {
      const err = status.type === "error" ? status.error : undefined;
      if (err instanceof PermissionViolationError && err.operation === "publish") {
        pending.refuse(err);
      }
    }
  })().catch(() => undefined);
  void nc.closed().then(() => pending.failAll(new ClosedConnectionError()));

  const defaultTimeout = js.getOptions().timeout ?? DEFAULT_TIMEOUT_MS;
  const publish = (
    subject: string,
    data?: Payload,
    opts?: Partial<JetStreamPublishOptions>,
  ): Promise<PubAck> => {
    if (!ownsOptions(opts)) return js.publish(subject, data, opts);
    return new Promise<PubAck>((resolve, reject) => {
      if (subscription === undefined || subscription.isClosed()) {
        subscription = nc.subscribe(`${prefix}.*`, { callback: onReply });
      }
      const id = nextId++;
      const plain = opts?.msgID === undefined && opts?.expect === undefined;
      const hdrs = plain ? opts?.headers : headersWith(opts);
      nc.publish(subject, data, {
        reply: `${replyPrefix}${id}`,
        ...(hdrs === undefined ? {} : { headers: hdrs }),
      });
      const deadline = Date.now() + (opts?.timeout ?? defaultTimeout);
      pending.add(id, { resolve, reject, subject, deadline });
    });
  };

  const client = Object.create(js) as JetStreamClient;
  Object.defineProperty(client, "publish", { value: publish, enumerable: false });
  return client;
}
