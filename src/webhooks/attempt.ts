import type { Db } from "../db/database.js";
import type { WebhookEndpointRow } from "../db/tables/webhooks.js";
import type { SecretBox } from "../lib/secret-box.js";
import { AttemptSigner } from "./attempt-signer.js";
import { deliveryHeaders } from "./headers.js";
import { NO_URL_ERROR } from "./outbox.js";
import type { AttemptEndpoint, AttemptEvent, Claimed } from "./queue.js";
import type { AttemptRecord, ResultWriter } from "./result-writer.js";
import { ensureEndpoint, openSecrets } from "./secrets.js";
import type { AttemptOutcome, WebhookTransport } from "./transport.js";

/**
 * One delivery attempt of a claimed event (docs/merchants/webhooks.md#answer-fast-process-later): sign, POST, record.
 *
 * Schedule: attempt 1 at once; after the n-th automatic failure the next one waits
 * `WEBHOOK_RETRY_SCHEDULE[n-1]`; after the last retry fails the event is `failed`. Manual retry:
 * one attempt now whatever the status; it never consumes or reschedules the automatic series.
 */

/** Opened secrets of one endpoint state (keyed by its ciphertexts, so a rotation misses the cache). */
interface OpenedSecrets {
  /** Signs with the current secret only. */
  current: AttemptSigner;
  /** Signs with the current and the previous secret (during the rotation grace), if any. */
  both: AttemptSigner | undefined;
}
const SECRET_CACHE_LIMIT = 10_000;

export interface AttemptsOptions {
  db: Db;
  box: SecretBox;
  transport: WebhookTransport;
  /** Where results go (automatic attempts: the group commit; manual and test ones: at once). */
  writer: ResultWriter;
  retryScheduleMs: readonly number[];
}

export class Attempts {
  readonly #db: Db;
  readonly #box: SecretBox;
  readonly #transport: WebhookTransport;
  readonly #writer: ResultWriter;
  readonly #schedule: readonly number[];
  readonly #secrets = new Map<string, OpenedSecrets>();

  constructor(options: AttemptsOptions) {
    this.#db = options.db;
    this.#box = options.box;
    this.#transport = options.transport;
    this.#writer = options.writer;
    this.#schedule = options.retryScheduleMs;
  }

  /** One attempt of a claimed event: sign, POST, record (automatic attempts: in the next batch). */
  async attempt(
    { event, token, endpoint: claimedEndpoint }: Claimed,
    options: { manual: boolean },
  ): Promise<AttemptOutcome> {
    const endpoint =
      claimedEndpoint ?? (await ensureEndpoint(this.#db, this.#box, event.merchant_id, event.environment));
    const url = event.url_override ?? endpoint.url;
    const startedAt = new Date();
    let outcome: AttemptOutcome;
    if (!url) {
      outcome = {
        ok: false,
        responseStatus: null,
        error: NO_URL_ERROR,
        latencyMs: 0,
        responseBody: null,
        url: null,
      };
    } else {
      // The body's UTF-8 bytes once: both signatures and the request use the same buffer.
      const bytes = Buffer.from(event.body, "utf8");
      const headers = deliveryHeaders({ transactionId: event.transaction_id, isTest: event.is_test });
      this.#signer(endpoint, startedAt).addHeaders(
        headers,
        event.id,
        Math.floor(startedAt.getTime() / 1000),
        bytes,
      );
      outcome = await this.#transport.post(url, bytes, headers);
    }
    const record = this.#result(event, token, startedAt, outcome, options.manual);
    if (options.manual || event.is_test) await this.#writer.writeRecords([record]);
    else this.#writer.record(record);
    return outcome;
  }

  /**
   * The signer of an attempt: the current secret, plus the previous one until it expires. The
   * opened secrets and their imported HMAC keys are kept in memory, keyed by the ciphertexts:
   * decrypted once per endpoint state instead of once per attempt; a rotation changes the
   * ciphertexts, so it is seen at once, and the expiry is read from the row on every attempt.
   */
  #signer(endpoint: AttemptEndpoint, now: Date): AttemptSigner {
    const key = endpoint.previous_secret_sealed
      ? `${endpoint.secret_sealed}|${endpoint.previous_secret_sealed}`
      : (endpoint.secret_sealed ?? "");
    let opened = this.#secrets.get(key);
    if (!opened) {
      // Both opened whatever the expiry (epoch); the row's expiry is checked on every attempt.
      const { current, previous } = openSecrets(this.#box, endpoint as WebhookEndpointRow, new Date(0));
      opened = {
        current: new AttemptSigner([current]),
        both: previous ? new AttemptSigner([current, previous]) : undefined,
      };
      if (this.#secrets.size >= SECRET_CACHE_LIMIT) this.#secrets.clear();
      this.#secrets.set(key, opened);
    }
    const expires = endpoint.previous_secret_expires_at;
    return opened.both && expires && expires > now ? opened.both : opened.current;
  }

  /** The new state of an event after an attempt (the schedule decides). */
  #result(
    event: AttemptEvent,
    token: string,
    startedAt: Date,
    o: AttemptOutcome,
    manual: boolean,
  ): AttemptRecord {
    const autoAttempts = manual ? event.auto_attempts : event.auto_attempts + 1;
    let status: "pending" | "delivered" | "failed";
    let delayMs: number | null = null;
    if (o.ok) status = "delivered";
    else if (manual) status = event.delivery_status;
    else if (!event.is_test && autoAttempts <= this.#schedule.length) {
      status = "pending";
      delayMs = this.#schedule[autoAttempts - 1] as number;
    } else status = "failed";
    return {
      id: event.id,
      token,
      status,
      autoAttempts,
      delayMs,
      attemptNumber: event.attempts + 1,
      manual,
      startedAt,
      outcome: o,
    };
  }
}
