import type { JobView } from "../domain/index.ts";
import type { JobIdDeriver } from "../ids/index.ts";
import { pageOf } from "./sqlite.ts";
import type { IndexStore, JobFilter } from "./types.ts";

/** Newest first, as every page is: created_at, then job_id, descending. */
const newestFirst = (a: JobView, b: JobView): number =>
  Date.parse(b.created_at) - Date.parse(a.created_at) || (a.job_id < b.job_id ? 1 : -1);

/**
 * The index answers a search by request_id through its primary key: a job's id is the keyed hash
 * of its client and request_id (shared/ids), so in each client in scope a request_id names one
 * job id, and the search is one primary-key lookup per client. The index keeps no b-tree of
 * request_ids: with random request_ids (UUIDs, as callers make them) its insert dirtied a random
 * page for every new job, 15 of SQLite's 37 µs of CPU per row (bench/index-write.ts). The scope
 * is the filter's clients, or every client with indexed jobs (one removed from the config too).
 * One query per client: with lists of clients and job ids together, SQLite's planner took
 * another filter's index and walked its rows.
 */
export function withRequestIdLookup(store: IndexStore, deriveJobId: JobIdDeriver): IndexStore {
  /** The filter of each client in scope, narrowed to the job its request_id names. */
  const perClient = async (filter: JobFilter, requestId: string): Promise<JobFilter[]> => {
    const clients =
      filter.clientIds !== undefined && filter.clientIds.length > 0
        ? filter.clientIds
        : await store.clients();
    const asked = filter.jobIds !== undefined && filter.jobIds.length > 0 ? filter.jobIds : null;
    return clients
      .map((client) => ({ client, jobId: deriveJobId(client, requestId) }))
      .filter(({ jobId }) => asked === null || asked.includes(jobId))
      .map(({ client, jobId }) => ({ ...filter, clientIds: [client], jobIds: [jobId] }));
  };
  return {
    ...store,
    async page(query) {
      const { requestId } = query.filter;
      if (requestId === undefined) return store.page(query);
      const filters = await perClient(query.filter, requestId);
      // At most one row each (the primary key): the merge is the page.
      const pages = await Promise.all(filters.map((filter) => store.page({ ...query, filter })));
      return pageOf(pages.flatMap((p) => p.views).sort(newestFirst), query.limit);
    },
    async count(filter, cap) {
      const { requestId } = filter;
      if (requestId === undefined) return store.count(filter, cap);
      const counts = await Promise.all(
        (await perClient(filter, requestId)).map((f) => store.count(f, cap)),
      );
      return Math.min(
        counts.reduce((sum, n) => sum + n, 0),
        cap + 1,
      );
    },
  };
}
