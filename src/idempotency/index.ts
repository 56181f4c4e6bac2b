/**
 * `Idempotency-Key` records (docs/merchants/idempotency.md): claiming a key, its lease, the stored answer, the purge,
 * and the protocol of a creating request run once per key (`runIdempotent`).
 */
export {
  claimIdempotencyKey,
  completeIdempotencyKey,
  type IdempotencyClaim,
  type IdempotencyScope,
  purgeIdempotencyKeys,
  releaseIdempotencyKey,
  renewIdempotencyClaim,
} from "./keys.js";
export { idempotencyPurgeJob } from "./purge-job.js";
export {
  IDEMPOTENCY_RETENTION_MS,
  type IdempotencyContext,
  type IdempotentAnswer,
  type IdempotentCall,
  type IdempotentOptions,
  type IdempotentRequest,
  type IdempotentWork,
  runIdempotent,
} from "./run.js";
