import type { JobView } from "../domain/index.ts";
import type { JobIdDeriver } from "../ids/index.ts";
import { pageOf } from "./sqlite.ts";
import type { IndexStore, JobFilter, JobKey } from "./types.ts";

/** Newest first, as every page is: created_at, then job_id, descending. */
const newestFirst = (a: JobView, b: JobView): number =>
  Date.parse(b.created_at) - Date.parse(a.created_at) || (a.job_id < b.job_id ? 1 : -1);

export interface RequestIdLookupDeps {
  /** The hub's job ids: the keyed hash of client and request_id (shared/ids). */
  readonly deriveJobId: JobIdDeriver;
  /**
   * When the job was created (its run.requested's time, epoch ms), from the event stream;
   * undefined when the client has no such job.
   */
  readonly createdMsOf: (job: { clientId: string; jobId: string }) => Promise<number | undefined>;
  /**
   * False while the stream cannot be read (NATS away): the search then walks the index's rows for
   * the request_id instead, slower but answered from the index alone, as every search is.
   */
  readonly streamReachable: () => boolean;
}

/**
 * The index answers a search by request_id through its key: a job's id is the keyed hash of its
 * client and request_id (shared/ids), so in each client in scope a request_id names one job id,
 * whose run.requested (one read of the stream by subject) gives the creation time that completes
 * the key. The index keeps no b-tree of request_ids: with random request_ids (UUIDs, as callers
 * make them) its insert dirtied a random page for every new job, 15 of SQLite's 37 µs of CPU per
 * row (bench/index-write.ts). The scope is the filter's clients, or every client with indexed
 * jobs (one removed from the config too). One query per job: with lists of keys together, SQLite's
 * planner took another filter's index and walked its rows.
 */
export function withRequestIdLookup(store: IndexStore, deps: RequestIdLookupDeps): IndexStore {
  /**
   * The filter of each job the request_id names in a client in scope; undefined when the stream
   * cannot tell the jobs' creation times now (the search then filters the rows themselves).
   */
  const perJob = async (filter: JobFilter, requestId: string): Promise<JobFilter[] | undefined> => {
    if (!deps.streamReachable()) return undefined;
    const clients =
      filter.clientIds !== undefined && filter.clientIds.length > 0
        ? filter.clientIds
        : await store.clients();
    const asked = filter.jobs !== undefined && filter.jobs.length > 0 ? filter.jobs : null;
    const named = clients
      .map((clientId) => ({ clientId, jobId: deps.deriveJobId(clientId, requestId) }))
      .filter(
        (job) =>
          asked === null || asked.some((k) => k.clientId === job.clientId && k.jobId === job.jobId),
      );
    let created: (number | undefined)[];
    try {
      created = await Promise.all(named.map((job) => deps.createdMsOf(job)));
    } catch {
      // A read of the stream failed (NATS went away meanwhile): the same answer, from the rows.
      return undefined;
    }
    const keys: JobKey[] = [];
    named.forEach((job, i) => {
      const createdMs = created[i];
      if (createdMs !== undefined) keys.push({ ...job, createdMs });
    });
    return keys.map((key) => ({ ...filter, clientIds: [key.clientId], jobs: [key] }));
  };
  return {
    ...store,
    async page(query) {
      const { requestId } = query.filter;
      if (requestId === undefined) return store.page(query);
      const filters = await perJob(query.filter, requestId);
      if (filters === undefined) return store.page(query);
      // At most one row each (the key): the merge is the page.
      const pages = await Promise.all(filters.map((filter) => store.page({ ...query, filter })));
      return pageOf(pages.flatMap((p) => p.views).sort(newestFirst), query.limit);
    },
    async count(filter, cap) {
      const { requestId } = filter;
      if (requestId === undefined) return store.count(filter, cap);
      const filters = await perJob(filter, requestId);
      if (filters === undefined) return store.count(filter, cap);
      const counts = await Promise.all(filters.map((f) => store.count(f, cap)));
      return Math.min(
        counts.reduce((sum, n) => sum + n, 0),
        cap + 1,
      );
    },
  };
}
