/** The base64url alphabet's value of each character code; -1 for a character outside it. */
const BASE64URL = (() => {
  const values = new Int8Array(128).fill(-1);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  for (let i = 0; i < alphabet.length; i++) values[alphabet.charCodeAt(i)] = i;
  return values;
})();

/** Where the job id's hash starts: after `job_`. */
const HASH_START = 4;

const digit = (jobId: string, at: number): number => {
  const code = jobId.charCodeAt(at);
  return code < 128 ? Math.max(0, BASE64URL[code] ?? 0) : 0;
};

/**
 * The partition a job lives in: the first 4 base64url characters of its id after `job_` (24 bits,
 * big-endian) mod P. The id is the keyed HMAC of (client, request_id), so the bits are uniform, a
 * retry of a request lands in the same partition, and every component finds a job's partition
 * from its id alone. A malformed id (never stored) maps to a valid partition all the same.
 */
export function partitionOf(jobId: string, partitions: number): number {
  if (partitions <= 1) return 0;
  const bits =
    (digit(jobId, HASH_START) << 18) |
    (digit(jobId, HASH_START + 1) << 12) |
    (digit(jobId, HASH_START + 2) << 6) |
    digit(jobId, HASH_START + 3);
  return bits % partitions;
}
