import { randomBytes } from "node:crypto";
import type { KV } from "@nats-io/kv";
import { type MemberRecord, memberKey } from "./claims-view.ts";

/**
 * This process's member record in the lease bucket (`members.<id>`, TTL 3 s): the one key the
 * process renews for every claim it holds, whatever the groups and P. Written by create, then by
 * compare-and-set on its own revision, so a record that expired or that someone else wrote is a
 * failed renewal, never overwritten.
 */
export interface MemberRecordWriter {
  /** The member id the claims name. */
  id(): string;
  /** The record has been written under this id (false: not yet, or lost since). */
  joined(): boolean;
  /** When the last renewal the server stored was sent (epoch ms; 0: none). */
  renewedAt(): number;
  /** Writes the record naming the groups it competes in; the error when it was not written. */
  renew(groups: readonly string[]): Promise<Error | undefined>;
  /** A new id after the record was lost: the next renewal creates it. */
  rejoin(): void;
  /** Deletes the record, so the others count this member out at once. */
  remove(): Promise<void>;
}

const newMemberId = () => randomBytes(6).toString("hex");

export function createMemberRecord(deps: {
  readonly leases: KV;
  /** Who this is (host and pid), for operators reading the bucket. */
  readonly holder: string;
}): MemberRecordWriter {
  let id = newMemberId();
  let revision = 0;
  let renewedAt = 0;
  return {
    id: () => id,
    joined: () => revision !== 0,
    renewedAt: () => renewedAt,
    async renew(groups) {
      const record: MemberRecord = {
        holder: deps.holder,
        groups: [...groups],
        renewed_at: new Date().toISOString(),
      };
      const value = JSON.stringify(record);
      // The record's TTL runs from when the server stored it, which is after this: a holder
      // counts from here, so a slow answer never stretches it past its record's expiry.
      const sentAt = Date.now();
      try {
        revision =
          revision === 0
            ? await deps.leases.create(memberKey(id), value)
            : await deps.leases.update(memberKey(id), value, revision);
        renewedAt = sentAt;
        return undefined;
      } catch (err) {
        return err as Error;
      }
    },
    rejoin() {
      id = newMemberId();
      revision = 0;
    },
    async remove() {
      if (revision === 0) return;
      await deps.leases.delete(memberKey(id), { previousSeq: revision }).catch(() => undefined);
    },
  };
}
