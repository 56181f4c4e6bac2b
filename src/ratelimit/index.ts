// The rate limiter's public face: the store interface, its three implementations and the client key.
export { clientKey } from "./client-key.js";
export { FallbackRateLimitStore } from "./fallback-store.js";
export { MemoryRateLimitStore } from "./memory-store.js";
export { RedisRateLimitStore } from "./redis-store.js";
export type { BatchRateLimitStore, RateLimitHit, RateLimitResult, RateLimitStore } from "./store.js";
