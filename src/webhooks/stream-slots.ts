import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import type { Db } from "../db/database.js";
import type { Environment } from "../domain/environment.js";
import { AppError } from "../domain/errors.js";

/**
 * The places of open webhook streams, shared by every instance through the database (issue #34
 * finding 9; table `webhook_streams`, migration 0027). Key pairs are free to mint, so a cap per key
 * alone bounds nothing: streams are capped per key, per merchant (both environments) and in total.
 *
 * A place is a lease row: taken in one transaction under a transaction-level advisory lock (so two
 * instances admitting at once cannot both take the last place), renewed by its instance every
 * `leaseSeconds / 3`, deleted when the stream ends. An instance that dies without closing leaves
 * rows nobody renews; they stop counting at `expires_at` and the next admission deletes them.
 */

export interface StreamLimits {
  perKey: number;
  perMerchant: number;
  total: number;
}

/** What a place is for. */
export interface StreamOwner {
  merchantId: string;
  environment: Environment;
  apiKeyId: string;
}

/** Admissions wait for each other on this lock (arbitrary constant: "webhook streams"). */
const ADMISSION_LOCK = 7_242_516_412;
/** A refused admission: try again after this many seconds (`Retry-After`). */
const RETRY_AFTER_SECONDS = 5;
export const DEFAULT_LEASE_SECONDS = 30;

export class StreamSlots {
  readonly #db: Db;
  readonly #instanceId: string;
  readonly #limits: StreamLimits;
  readonly #leaseSeconds: number;

  constructor(db: Db, instanceId: string, limits: StreamLimits, leaseSeconds = DEFAULT_LEASE_SECONDS) {
    this.#db = db;
    this.#instanceId = instanceId;
    this.#limits = limits;
    this.#leaseSeconds = leaseSeconds;
  }

  get leaseSeconds(): number {
    return this.#leaseSeconds;
  }

  /** Takes a place for `owner`: its id, or 429 `RATE_LIMITED` naming the cap that is reached. */
  async acquire(owner: StreamOwner): Promise<string> {
    const id = `wss_${randomBytes(12).toString("hex")}`;
    const limits = this.#limits;
    const refusal = await this.#db.transaction().execute(async (trx) => {
      await sql`select pg_advisory_xact_lock(${ADMISSION_LOCK}::bigint)`.execute(trx);
      await sql`delete from webhook_streams where expires_at < now()`.execute(trx);
      const { rows } = await sql<{ per_key: number; per_merchant: number; total: number }>`
        select count(*) filter (where api_key_id = ${owner.apiKeyId})::int as per_key,
               count(*) filter (where merchant_id = ${owner.merchantId})::int as per_merchant,
               count(*)::int as total
        from webhook_streams`.execute(trx);
      const n = rows[0] ?? { per_key: 0, per_merchant: 0, total: 0 };
      if (n.per_key >= limits.perKey) {
        return `At most ${limits.perKey} webhook streams may be open per API key; close one first.`;
      }
      if (n.per_merchant >= limits.perMerchant) {
        return `At most ${limits.perMerchant} webhook streams may be open per merchant (all its key pairs together); close one first.`;
      }
      if (n.total >= limits.total) {
        return `The gateway has its maximum of ${limits.total} webhook streams open in total; try again later.`;
      }
      await sql`
        insert into webhook_streams (id, instance_id, merchant_id, environment, api_key_id, expires_at)
        values (${id}, ${this.#instanceId}, ${owner.merchantId}, ${owner.environment}, ${owner.apiKeyId},
                now() + ${this.#leaseSeconds}::int * interval '1 second')`.execute(trx);
      return null;
    });
    if (refusal !== null) throw AppError.rateLimited(refusal, RETRY_AFTER_SECONDS);
    return id;
  }

  /** Renews the leases of `ids`; returns the ids whose row is gone (expired and taken meanwhile). */
  async renew(ids: readonly string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const { rows } = await sql<{ id: string }>`
      update webhook_streams set expires_at = now() + ${this.#leaseSeconds}::int * interval '1 second'
      where id = any(${[...ids]}::text[])
      returning id`.execute(this.#db);
    const kept = new Set(rows.map((r) => r.id));
    return ids.filter((id) => !kept.has(id));
  }

  async release(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await sql`delete from webhook_streams where id = any(${[...ids]}::text[])`.execute(this.#db);
  }
}
