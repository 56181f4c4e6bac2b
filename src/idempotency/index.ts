/** `Idempotency-Key` records (CONTRACT §4): claiming a key, its lease, the stored answer, the purge. */
export {
  claimIdempotencyKey,
  completeIdempotencyKey,
  type IdempotencyClaim,
  type IdempotencyScope,
  purgeIdempotencyKeys,
  releaseIdempotencyKey,
  renewIdempotencyClaim,
} from "./keys.js";
