import type { Db } from "../db/database.js";
import { inTransaction } from "../db/transaction.js";
import type { AuditActor, AuditEntry } from "../domain/audit.js";
import { type NoticeSending, type QueuedNotice, sendClaimedNotices } from "./notifications.js";
import { appendAudit } from "./record.js";

/** What only the action knows of its record: its target's id, details, the actor of a sign-in. */
export interface AuditFacts {
  targetId?: string | null;
  details?: Record<string, unknown>;
  /** The actor when the request has no principal yet (sign-in, password reset by token). */
  actor?: AuditActor & { merchantId: string | null };
}

/** What a use case is given to write its action's audit record in its own transaction. */
export interface AuditRecorder {
  record(trx: Db, facts?: AuditFacts): Promise<void>;
}

/**
 * The audit record of one action (issue #36): written inside the action's own transaction, so the
 * action and its record commit together, and a record that cannot be written rolls the action
 * back. The HTTP side builds one per audited request (`http/plugins/audit.ts`: actor, client IP,
 * request id); the action adds its facts. The notices of a security-relevant action are queued in
 * the same transaction and sent by `sendNotices` once it committed.
 */
export class AuditTrail implements AuditRecorder {
  #queued: QueuedNotice[] = [];
  #written = false;

  constructor(
    private readonly entryOf: (facts: AuditFacts) => AuditEntry,
    private readonly notify: NoticeSending,
  ) {}

  /** Appends the record in `trx`, the action's transaction (never outside one). */
  async record(trx: Db, facts: AuditFacts = {}): Promise<void> {
    if (!trx.isTransaction) throw new Error("an audit record is written inside its action's transaction");
    // A transaction retried after a transient fault runs this again: the last run's rows committed.
    this.#queued = await appendAudit(trx, this.entryOf(facts), new Date(this.notify.clock.now()), true);
    this.#written = true;
  }

  /** Whether the action recorded itself (the HTTP side writes a missing record after the fact, and says so). */
  get written(): boolean {
    return this.#written;
  }

  /** After the commit: mails the notices the record queued (a failed send stays queued for the worker). */
  async sendNotices(db: Db): Promise<void> {
    const queued = this.#queued;
    this.#queued = [];
    if (queued.length === 0) return;
    try {
      await sendClaimedNotices(db, this.notify, queued);
    } catch (err) {
      this.notify.logger?.error(
        { err },
        "security notices not sent now; the worker retries after their lease",
      );
    }
  }
}

/**
 * Runs `action` and its audit record in one transaction (the caller's, or a new one): a failed
 * record rolls the action back. `facts` reads the record's facts off the action's result.
 */
export function audited<T>(
  db: Db,
  trail: AuditRecorder,
  action: (trx: Db) => Promise<T>,
  facts?: (result: T) => AuditFacts,
): Promise<T> {
  return inTransaction(db, async (trx) => {
    const result = await action(trx);
    await trail.record(trx, facts?.(result));
    return result;
  });
}
