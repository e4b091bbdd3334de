/** Settings shared by the Redis peer's HTTP server and worker (env: REDIS_URL, PEER_PREFIX). */
import { type ConnectionOptions, createBunRedisClient, RedisConnection } from "bullmq";
import { RedisClient } from "bun";

export const QUEUE = "runs";
/** Every key the peer writes starts with this prefix, so the bench can remove exactly its own keys. */
export const PREFIX = process.env.PEER_PREFIX ?? "swbench";
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/**
 * BullMQ 6 on Bun's built-in Redis client (ioredis is not installed): every connection BullMQ
 * opens, including the worker's blocking one, is a new Bun RedisClient.
 */
export function redisConnection(): ConnectionOptions {
  RedisConnection.clientFactory = () => createBunRedisClient(new RedisClient(REDIS_URL));
  const url = new URL(REDIS_URL);
  return { host: url.hostname, port: Number(url.port || 6379) };
}
