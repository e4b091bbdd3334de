/**
 * Settings shared by the Redis peer's HTTP server and worker (env: REDIS_URL, PEER_PREFIX).
 * The same files run under Bun and, bundled by bench/lib/peers.ts, under Node.
 */
import { type ConnectionOptions, createBunRedisClient, RedisConnection } from "bullmq";
import type { RedisClient } from "bun";

export const QUEUE = "runs";
/** Every key the peer writes starts with this prefix, so the bench can remove exactly its own keys. */
export const PREFIX = process.env.PEER_PREFIX ?? "swbench";
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/**
 * Under Bun, BullMQ 6 on Bun's built-in Redis client: every connection BullMQ opens, including the
 * worker's blocking one, is a new Bun RedisClient (the faster reference). Under Node, BullMQ's
 * default, ioredis, the way BullMQ's documentation runs it.
 */
export function redisConnection(): ConnectionOptions {
  const BunRedis = (globalThis as { Bun?: { RedisClient: typeof RedisClient } }).Bun?.RedisClient;
  if (BunRedis) RedisConnection.clientFactory = () => createBunRedisClient(new BunRedis(REDIS_URL));
  const url = new URL(REDIS_URL);
  // ioredis: BullMQ's workers need maxRetriesPerRequest null (BullMQ's docs, "Connections").
  return { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
}
